"""Per-op definitions: shape/type inference, fusion pattern kind, numpy reference.

`OpDef.infer(src, attrs) -> (shape, dtype)` receives the input nodes and the
attribute dict and raises `GraphError` on bad input. `OpDef.compute(args,
attrs) -> np.ndarray` is the numpy reference, given the input arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .errors import GraphError
from .ops import Kind, Op

Infer = Callable[[tuple, dict[str, Any]], tuple[tuple[int, ...], str]]
Compute = Callable[[list[np.ndarray], dict[str, Any]], np.ndarray]


@dataclass(frozen=True)
class OpDef:
    op: Op
    kind: Kind
    infer: Infer
    compute: Compute
    arity: tuple[int, int]  # min, max number of inputs


_REGISTRY: dict[Op, OpDef] = {}


def register(op: Op, kind: Kind, arity: int | tuple[int, int] = 1):
    """Decorator for a class-free op definition: `@register(Op.X, Kind.Y, 2)` over a function
    returning `(infer, compute)`.
    """
    lo, hi = (arity, arity) if isinstance(arity, int) else arity

    def deco(fn: Callable[[], tuple[Infer, Compute]]):
        infer, compute = fn()

        def checked_infer(src, attrs):
            if not lo <= len(src) <= hi:
                want = lo if lo == hi else f"{lo} to {hi}"
                raise GraphError(f"expects {want} inputs, got {len(src)}")
            return infer(src, attrs)

        _REGISTRY[op] = OpDef(op, kind, checked_infer, compute, (lo, hi))
        return fn
    return deco


def lookup(op: Op) -> OpDef:
    """The definition of `op`. Raises KeyError naming the op if it has none."""
    if not _REGISTRY:
        from . import opdefs  # noqa: F401  (registers every op)
    try:
        return _REGISTRY[op]
    except KeyError:
        raise KeyError(f"op {op.name} has no definition in compiler.graph.opdefs") from None


def kind_of(op: Op) -> Kind:
    return lookup(op).kind
