"""The root of the project's own exceptions: :class:`VtaError`.

Every error that means *bad input* (a model, a module folder, a program file, a
config, an option) or *an unreachable or failing device* derives from it, so
that callers (the ``vta`` CLI above all) can tell them from bugs: a ``VtaError``
is shown as a one-line message that names the thing, the bad value and the fix;
any other exception is an internal error and is reported as one.

It lives in ``vta_hw`` (the contract, imported by every layer) so that ``sim``,
``compiler`` and ``driver`` can all derive from it. Subclasses that were
``ValueError``\\ s (or ``RuntimeError``\\ s) stay so too: callers catching those
keep working.
"""
from __future__ import annotations


class VtaError(Exception):
    """Bad input or an unusable device; the message is one line naming the thing, the value
    and the fix. Raised only through subclasses (``ConfigError``, ``ProgramFormatError``,
    ``SimError``, ``GraphError``, ``RuntimeModuleError``, ``DeviceError`` ...)."""


class ArgumentError(VtaError, ValueError):
    """An argument of a public call is outside its domain (a GEMM size that is no multiple
    of the block, a negative count ...); the message names the argument, the value and the
    rule. For errors that have no more specific class of their own."""
