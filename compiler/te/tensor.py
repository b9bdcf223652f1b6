"""Tensor expressions: `placeholder`, `compute`, `reduce_axis`, reductions and element helpers.

Bodies are loop-IR expressions (`compiler.tir.ir.Expr`); `A[i, j]` on a Tensor
builds a TENSOR_READ node and `sum(expr, axis=k)` a REDUCE node, which lowering
replaces by loads and loops.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from ..tir import dtype as dt
from ..tir import ir
from ..tir.ops import Op
from ..tir.visit import walk_expr


@dataclass(eq=False)
class IterVar(ir.ExprOps):
    """An iteration axis: a variable over [min, min+extent).

    kind: "data_par" (an output axis), "reduce", "thread" (a GPU thread axis from
    `thread_axis`), "vthread" (a virtual thread). `extent` is None for axes made by
    split and fuse, whose extents bound inference finds at lowering.
    """

    var: ir.Expr
    extent: int | None
    kind: str = "data_par"
    min: int = 0

    @property
    def name(self) -> str:
        return self.var.name

    def as_expr(self) -> ir.Expr:
        return self.var

    def __repr__(self) -> str:
        return f"IterVar({self.name}, {self.kind})"


@dataclass(eq=False)
class PlaceholderOp:
    name: str
    shape: tuple[int, ...]
    dtype: str
    output: Tensor = field(init=False, repr=False)

    def __post_init__(self):
        self.output = Tensor(self)


@dataclass(eq=False)
class ComputeOp:
    """out[axis] = body; `reduce_axis` are the axes of a top-level REDUCE in `body`."""

    name: str
    axis: tuple[IterVar, ...]
    reduce_axis: tuple[IterVar, ...]
    body: ir.Expr
    output: Tensor = field(init=False, repr=False)

    def __post_init__(self):
        self.output = Tensor(self)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(a.extent for a in self.axis)

    @property
    def dtype(self) -> str:
        return self.body.dtype

    def reads(self) -> list[Tensor]:
        """Tensors read by the body, in order of first appearance."""
        return tensors_read(self.body)


@dataclass(eq=False)
class Tensor:
    """The output of an operation: `shape` (ints) and element `dtype`."""

    op: PlaceholderOp | ComputeOp

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def shape(self) -> tuple[int, ...]:
        return self.op.shape

    @property
    def dtype(self) -> str:
        return self.op.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getitem__(self, indices) -> ir.Expr:
        if not isinstance(indices, tuple):
            indices = (indices,)
        if len(indices) != self.ndim:
            raise IndexError(f"tensor {self.name!r} has {self.ndim} dimensions {self.shape}, "
                             f"indexed with {len(indices)} indices")
        return ir.Expr(Op.TENSOR_READ, self.dtype, tuple(ir.convert(i) for i in indices), self)

    def __repr__(self) -> str:
        return f"Tensor({self.name}: {self.dtype}{list(self.shape)})"


def tensors_read(e: ir.Expr) -> list[Tensor]:
    """Tensors that TENSOR_READ nodes of `e` read, in order of first appearance."""
    out: list[Tensor] = []
    for x in walk_expr(e):
        if x.op is Op.TENSOR_READ and x.arg not in out:
            out.append(x.arg)
    return out


def _shape(shape) -> tuple[int, ...]:
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if not all(isinstance(n, int) and n >= 1 for n in shape):
        raise ValueError(f"shape must be a tuple of positive ints, not {shape!r}")
    return shape


def placeholder(shape, dtype: str = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor of `shape` and element `dtype`."""
    dt.split_lanes(dtype)
    return PlaceholderOp(name, _shape(shape), dtype).output


def reduce_axis(dom, name: str = "k") -> IterVar:
    """A reduction axis over range(extent) for an int `dom`, or range(lo, hi) for a pair."""
    lo, hi = (0, dom) if isinstance(dom, int) else dom
    if hi <= lo:
        raise ValueError(f"reduce_axis {name!r}: empty range {dom!r}; give an extent >= 1")
    return IterVar(ir.var(name), hi - lo, "reduce", lo)


def thread_axis(tag: str) -> IterVar:
    """A thread axis for `Stage.bind`: "blockIdx.x", "threadIdx.y", ..., or "vthread"
    ("cthread", the name VTA's tutorials use, is the same virtual thread)."""
    if tag in ("vthread", "cthread"):
        return IterVar(ir.var("vthread"), None, "vthread")
    return IterVar(ir.var(tag), None, "thread")


def compute(shape, fcompute: Callable[..., ir.Expr], name: str = "compute") -> Tensor:
    """A tensor out[i0, i1, ...] = fcompute(i0, i1, ...) over `shape`.

    The body may be a reduction (`sum`, `max`, `min`) at its top only. Axis
    names come from the lambda's parameter names.
    Raises ValueError for a reduction nested inside the body.
    """
    shape = _shape(shape)
    params = list(inspect.signature(fcompute).parameters.values())
    names = ([p.name for p in params] if len(params) == len(shape)
             and all(p.kind is p.POSITIONAL_OR_KEYWORD for p in params)
             else [f"i{d}" for d in range(len(shape))])
    axis = tuple(IterVar(ir.var(n), e) for n, e in zip(names, shape))
    body = ir.convert(fcompute(*(a.var for a in axis)), "float32")
    reduce = ()
    if body.op is Op.REDUCE:
        reduce = body.arg[1]
        inner = [body.src[0], body.src[1]]
    else:
        inner = [body]
    for part in inner:
        if any(x.op is Op.REDUCE for x in walk_expr(part)):
            raise ValueError(f"compute {name!r}: a reduction must be the whole body, not part of "
                             "it; compute the reduction as its own tensor")
    return ComputeOp(name, axis, reduce, body).output


REDUCERS = {"sum": lambda a, b: a + b, "prod": lambda a, b: a * b, "max": ir.max_, "min": ir.min_}


def _reduce(combiner: str, expr, axis, where) -> ir.Expr:
    expr = ir.convert(expr, "float32")
    axes = tuple(axis) if isinstance(axis, Sequence) else (axis,)
    if not axes or not all(isinstance(a, IterVar) and a.kind == "reduce" for a in axes):
        raise ValueError(f"{combiner}: axis must be reduce_axis IterVars, not {axis!r}")
    cond = ir.const(True) if where is None else ir.convert(where, "bool")
    return ir.Expr(Op.REDUCE, expr.dtype, (expr, cond), (combiner, axes))


def sum(expr, axis, where=None) -> ir.Expr:  # noqa: A001 - te naming
    """Sum of `expr` over reduce axes `axis` (those where `where` holds)."""
    return _reduce("sum", expr, axis, where)


def prod(expr, axis, where=None) -> ir.Expr:
    """Product of `expr` over reduce axes `axis` (those where `where` holds)."""
    return _reduce("prod", expr, axis, where)


def max(expr, axis, where=None) -> ir.Expr:  # noqa: A001
    """Maximum of `expr` over reduce axes `axis`."""
    return _reduce("max", expr, axis, where)


def min(expr, axis, where=None) -> ir.Expr:  # noqa: A001
    """Minimum of `expr` over reduce axes `axis`."""
    return _reduce("min", expr, axis, where)


def identity(combiner: str, dtype: str) -> ir.Expr:
    """The start value of a reduction: 0 for sum, 1 for prod, the lowest / highest value for max / min."""
    if combiner in ("sum", "prod"):
        return ir.const(0 if combiner == "sum" else 1, dtype)
    info = np.finfo(dtype) if dt.is_float(dtype) else np.iinfo(dtype)
    return ir.const(info.min if combiner == "max" else info.max, dtype)


def if_then_else(cond, a, b) -> ir.Expr:
    """cond ? a : b where only the taken side is evaluated (so it may guard an out-of-bounds
    read, as in padding); lowering turns it into IfThenElse statements."""
    sel = ir.select(cond, a, b)
    return ir.Expr(Op.CALL, sel.dtype, sel.src, "if_then_else")


def cast(x, dtype: str) -> ir.Expr:
    return ir.cast(x, dtype)


def maximum(a, b) -> ir.Expr:
    return ir.max_(a, b)


def minimum(a, b) -> ir.Expr:
    return ir.min_(a, b)


def _intrinsic(name: str):
    def f(*args):
        first = ir.convert(args[0], "float32")
        return ir.call(name, first.dtype, first, *args[1:])
    f.__name__ = name
    f.__doc__ = f"Elementwise {name} (a CALL of intrinsic {name!r})."
    return f


exp, log, sqrt, rsqrt, tanh, sigmoid, erf, fabs, power, floor, ceil = (
    _intrinsic(n) for n in ("exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "fabs", "pow",
                            "floor", "ceil"))
