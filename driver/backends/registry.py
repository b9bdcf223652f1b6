"""The one registry of device backends: name -> backend class.

``Device(name, ...)`` and the CLI's ``--device`` choices read it; the built-in
backends (fsim, tsim, rtl, fpga) register in ``driver/backends/__init__.py``,
and another package registers its own the same way::

    from driver import backends

    @backends.register
    class MyBackend:
        name, timed, description = "mine", True, "my accelerator model"
        options = {"host": "where it runs"}
        def __init__(self, cfg, dram_timing=None, *, host="localhost"): ...
        def run(self, program, image, max_cycles=None) -> BackendResult: ...

    Device("mine", host="lab-3")

Register before ``driver.cli`` is imported for ``vta run --device`` to list it.
"""
from __future__ import annotations

import re

from .base import Backend, BackendError

_BACKENDS: dict[str, type[Backend]] = {}

#: A backend name: lowercase letters, digits, "-" and "_", starting with a letter.
_NAME = re.compile(r"[a-z][a-z0-9_-]*\Z")


def register(cls: type[Backend]) -> type[Backend]:
    """Add ``cls`` under ``cls.name``; returns ``cls`` (usable as a class decorator).

    Raises:
        BackendError: a declared attribute is missing or of the wrong kind (the
            message names it), or the name is taken by another class.
    """
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not _NAME.match(name):
        raise BackendError(f"backend name must be lowercase letters, digits, '-' or '_', "
                           f"starting with a letter, not {name!r} ({_qualname(cls)})")
    if not isinstance(getattr(cls, "timed", None), bool):
        raise BackendError(f"backend {name!r}: timed must be True or False (does run() report "
                           f"cycles?), not {getattr(cls, 'timed', None)!r}")
    desc = getattr(cls, "description", None)
    if not isinstance(desc, str) or not desc or "\n" in desc:
        raise BackendError(f"backend {name!r}: description must be one line of text, not {desc!r}")
    opts = getattr(cls, "options", None)
    if not isinstance(opts, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                             for k, v in opts.items()):
        raise BackendError(f"backend {name!r}: options must be a dict of option name -> help "
                           f"line ({{}} if none), not {opts!r}")
    if not callable(getattr(cls, "run", None)):
        raise BackendError(f"backend {name!r}: {_qualname(cls)} has no run(program, image, "
                           "max_cycles) method")
    old = _BACKENDS.get(name)
    if old is not None and old is not cls:
        raise BackendError(f"backend name {name!r} is taken by {_qualname(old)}; "
                           f"give {_qualname(cls)} another name")
    _BACKENDS[name] = cls
    return cls


def names() -> tuple[str, ...]:
    """The registered backend names, in registration order (built-ins first)."""
    return tuple(_BACKENDS)


def get(name: str) -> type[Backend]:
    """The backend class registered as ``name``.

    Raises:
        BackendError: no such backend; the message lists the registered names.
    """
    try:
        return _BACKENDS[name]
    except (KeyError, TypeError):
        raise BackendError(f"device backend must be one of {', '.join(_BACKENDS)}, "
                           f"not {name!r}") from None


def create(name: str, cfg, dram_timing=None, **options) -> Backend:
    """A new backend ``name`` for config ``cfg`` (``VTAConfig``) with DRAM model
    ``dram_timing`` (``DramTiming``; None: the backend's default) and ``options``.

    Raises:
        BackendError: unknown name, an option the backend does not declare, or one
            it needs and did not get (raised by the backend; the message names it).
    """
    cls = get(name)
    for key in options:
        if key not in cls.options:
            known = (f"its options are {', '.join(cls.options)}" if cls.options
                     else "it takes none")
            raise BackendError(f"the {name} backend has no option {key!r}; {known}")
    return cls(cfg, dram_timing, **options)


def _qualname(cls) -> str:
    return f"{getattr(cls, '__module__', '?')}.{getattr(cls, '__qualname__', repr(cls))}"
