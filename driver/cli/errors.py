"""Turns the project's own exceptions into one-line CLI errors with exit code 1."""
from __future__ import annotations

import functools

import click

from vta_hw.config import ConfigError
from vta_hw.isa import DecodeError
from vta_hw.program import ProgramFormatError


def user_errors() -> tuple[type[BaseException], ...]:
    """Exception types that mean bad input, not a bug: shown without a traceback."""
    from sim.errors import SimError
    return (ConfigError, DecodeError, ProgramFormatError, SimError, OSError, KeyError, ValueError)


def friendly(fn):
    """Decorator: report a user error as ``error: <message>`` and exit 1."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except user_errors() as e:
            msg = e.args[0] if isinstance(e, KeyError) and e.args else e
            raise click.ClickException(str(msg)) from None
    return wrapper
