"""Pass pipelines: flat, ordered, named lists of PrimFunc -> PrimFunc functions."""

from __future__ import annotations

from typing import Callable

from . import ir
from .passes.flatten import storage_flatten
from .passes.loop_partition import loop_partition
from .passes.unroll import unroll
from .passes.vectorize import vectorize
from .passes.vthread import inject_virtual_thread
from .simplify import simplify
from .verify import verify

Pass = tuple[str, Callable[[ir.PrimFunc], ir.PrimFunc]]

DEFAULT_PIPELINE: list[Pass] = [
    ("inject_virtual_thread", inject_virtual_thread),
    ("simplify", simplify),
    ("loop_partition", loop_partition),
    ("simplify", simplify),
    ("unroll", unroll),
    ("storage_flatten", storage_flatten),
    ("simplify", simplify),
    ("vectorize", vectorize),
]


def run_pipeline(func: ir.PrimFunc, passes: list[Pass], check: bool = False) -> ir.PrimFunc:
    """Apply `passes` in order; with `check`, verify the IR after each (IRError names the pass)."""
    flat = False
    if check:
        verify(func)
    for name, fn in passes:
        func = fn(func)
        flat = flat or name == "storage_flatten"
        if check:
            try:
                verify(func, flat)
            except ValueError as err:
                raise type(err)(f"after pass {name!r}: {err}") from err
    return func
