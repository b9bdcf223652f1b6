"""Reductions and what is built from them: ReduceSum/Mean/Max/Min/Prod/L1/L2/SumSquare/LogSum/
LogSumExp, ArgMax/ArgMin, TopK and CumSum.

One table (`_REDUCTIONS`) maps each Reduce* operator to a graph reduction with an
optional elementwise step before and after it. ArgMax, TopK and CumSum are
compositions of comparisons, WHERE and reductions over a compile-time index
table, so every target that lowers those lowers them too:

- ArgMax: the smallest index i with x[i] == max(x) (ArgMin: min; select_last_index:
  the largest such index).
- TopK: the rank of x[i] is the number of x[j] that come before it (greater, or
  equal with j < i; ONNX's order); output r holds the element of rank r. O(n^2)
  compares per row.
- CumSum: y[i] = sum over j <= i (exclusive: j < i; reverse: j >= i) of x[j], one
  masked row sum per output. O(n^2) adds per row.
"""

from __future__ import annotations

import numpy as np

from ...graph.ops import Op
from .tensor import _attr_or_input, _axes


def _reduce_axes(ctx, node, a, x, index):
    """Sorted axes from the `axes` attribute (older opsets) or constant input `index`; None: no-op."""
    axes = _attr_or_input(ctx, node, a, "axes", index)
    if not axes:
        if a.get("noop_with_empty_axes", 0):
            return None
        axes = range(len(x.shape))
    return tuple(sorted(set(_axes(ctx, node, axes, len(x.shape)))))


def _square(ctx, node, x):
    return ctx.make(node, Op.MUL, x, x)


def _log_sum_exp(ctx, node, x, axes, keepdims):
    """max + log(sum(exp(x - max))), the max kept for the subtraction (no overflow)."""
    m = ctx.make(node, Op.REDUCE_MAX, x, axes=axes, keepdims=1)
    s = ctx.make(node, Op.REDUCE_SUM, ctx.make(node, Op.EXP, ctx.make(node, Op.SUB, x, m)), axes=axes,
                 keepdims=keepdims)
    if not keepdims:
        m = ctx.make(node, Op.RESHAPE, m, newshape=s.shape)
    return ctx.make(node, Op.ADD, ctx.make(node, Op.LOG, s), m)


# ONNX op -> (step before, graph reduction, step after); None: no step
_REDUCTIONS = {
    "ReduceSum": (None, Op.REDUCE_SUM, None),
    "ReduceMean": (None, Op.REDUCE_MEAN, None),
    "ReduceMax": (None, Op.REDUCE_MAX, None),
    "ReduceMin": (None, Op.REDUCE_MIN, None),
    "ReduceProd": (None, Op.REDUCE_PROD, None),
    "ReduceL1": (Op.ABS, Op.REDUCE_SUM, None),
    "ReduceL2": (_square, Op.REDUCE_SUM, Op.SQRT),
    "ReduceSumSquare": (_square, Op.REDUCE_SUM, None),
    "ReduceLogSum": (None, Op.REDUCE_SUM, Op.LOG),
}


def _reduction(op_type):
    def convert(ctx, node, a):
        x = ctx.required(node, 0)
        axes = _reduce_axes(ctx, node, a, x, 1)
        keepdims = int(a.get("keepdims", 1))
        if axes is None:
            return x
        if op_type == "ReduceLogSumExp":
            return _log_sum_exp(ctx, node, x, axes, keepdims)
        before, op, after = _REDUCTIONS[op_type]
        if before is not None:
            x = before(ctx, node, x) if callable(before) else ctx.make(node, before, x)
        y = ctx.make(node, op, x, axes=axes, keepdims=keepdims)
        return y if after is None else ctx.make(node, after, y)
    return convert


def _iota(ctx, node, n, rank, axis, dtype=np.int64):
    """0..n-1 laid along `axis` of a rank-`rank` tensor (1 elsewhere), as a constant."""
    shape = [1] * rank
    shape[axis] = n
    return ctx.param(np.arange(n, dtype=dtype).reshape(shape), f"{node.name or node.op_type.lower()}_iota")


def _arg_reduce(largest):
    def convert(ctx, node, a):
        x = ctx.required(node, 0)
        rank = len(x.shape)
        axis = _axes(ctx, node, [a.get("axis", 0)], rank, "axis")[0]
        n, last = x.shape[axis], bool(a.get("select_last_index", 0))
        m = ctx.make(node, Op.REDUCE_MAX if largest else Op.REDUCE_MIN, x, axes=(axis,), keepdims=1)
        hit = ctx.make(node, Op.EQUAL, x, m)
        miss = ctx.param(np.asarray(-1 if last else n, np.int64), f"{node.name or 'arg'}_miss")
        cand = ctx.make(node, Op.WHERE, hit, _iota(ctx, node, n, rank, axis), miss)
        return ctx.make(node, Op.REDUCE_MAX if last else Op.REDUCE_MIN, cand, axes=(axis,),
                        keepdims=int(a.get("keepdims", 1)))
    return convert


def _to_last(ctx, node, x, axis):
    """x with `axis` moved last, and the perm that moves it back."""
    rank = len(x.shape)
    perm = [i for i in range(rank) if i != axis] + [axis]
    back = [perm.index(i) for i in range(rank)]
    return (x if axis == rank - 1 else ctx.make(node, Op.TRANSPOSE, x, perm=perm)), back


def _from_last(ctx, node, y, back):
    return y if back == sorted(back) else ctx.make(node, Op.TRANSPOSE, y, perm=back)


def _rows(ctx, node, xt):
    """xt [..., n] as [..., n, 1] (element i) and [..., 1, n] (element j)."""
    lead, n = xt.shape[:-1], xt.shape[-1]
    return (ctx.make(node, Op.RESHAPE, xt, newshape=lead + (n, 1)),
            ctx.make(node, Op.RESHAPE, xt, newshape=lead + (1, n)))


def topk(ctx, node, a):
    x = ctx.required(node, 0)
    rank = len(x.shape)
    axis = _axes(ctx, node, [a.get("axis", -1)], rank, "axis")[0]
    k = ctx.const(node, 1, "K") if len(node.input) > 1 else np.asarray(a.get("k"))
    if k is None or np.asarray(k).size != 1:
        raise ctx.fail(node, "K must be a constant with one element")
    k, n = int(np.asarray(k).reshape(-1)[0]), x.shape[axis]
    if not 1 <= k <= n:
        raise ctx.fail(node, f"K must be in 1..{n} (the size of axis {axis}), not {k}")
    xt, back = _to_last(ctx, node, x, axis)
    xi, xj = _rows(ctx, node, xt)
    ahead = ctx.make(node, Op.GREATER if a.get("largest", 1) else Op.LESS, xj, xi)
    earlier = ctx.param(np.tri(n, n, -1, dtype=np.bool_), f"{node.name or 'topk'}_earlier")  # [i, j]: j < i
    before = ctx.make(node, Op.WHERE, ctx.make(node, Op.EQUAL, xj, xi), earlier, ahead)
    rank_of = ctx.make(node, Op.REDUCE_SUM, ctx.make(node, Op.CAST, before, to="int64"),
                       axes=(len(xt.shape),), keepdims=0)                       # [..., n]: rank of i
    ranks = ctx.param(np.arange(k, dtype=np.int64).reshape(k, 1), f"{node.name or 'topk'}_ranks")
    pick = ctx.make(node, Op.EQUAL, ctx.make(node, Op.RESHAPE, rank_of, newshape=xj.shape), ranks)  # [..., k, n]
    zero = ctx.param(np.zeros((), x.dtype), f"{node.name or 'topk'}_zero")
    last = (len(pick.shape) - 1,)
    values = ctx.make(node, Op.REDUCE_SUM, ctx.make(node, Op.WHERE, pick, xj, zero), axes=last, keepdims=0)
    index = ctx.make(node, Op.WHERE, pick, _iota(ctx, node, n, 1, 0), ctx.param(np.zeros((), np.int64), "zero_i64"))
    indices = ctx.make(node, Op.REDUCE_SUM, index, axes=last, keepdims=0)
    return _from_last(ctx, node, values, back), _from_last(ctx, node, indices, back)


def cumsum(ctx, node, a):
    x = ctx.required(node, 0)
    axis = ctx.const(node, 1, "axis")
    axis = _axes(ctx, node, [int(np.asarray(axis).reshape(-1)[0])], len(x.shape), "axis")[0]
    n = x.shape[axis]
    xt, back = _to_last(ctx, node, x, axis)
    _, xj = _rows(ctx, node, xt)
    i, j = np.arange(n).reshape(n, 1), np.arange(n).reshape(1, n)
    exclusive, reverse = bool(a.get("exclusive", 0)), bool(a.get("reverse", 0))
    mask = (j > i if exclusive else j >= i) if reverse else (j < i if exclusive else j <= i)
    keep = ctx.param(mask, f"{node.name or 'cumsum'}_mask")
    zero = ctx.param(np.zeros((), x.dtype), f"{node.name or 'cumsum'}_zero")
    y = ctx.make(node, Op.REDUCE_SUM, ctx.make(node, Op.WHERE, keep, xj, zero), axes=(len(xt.shape),), keepdims=0)
    return _from_last(ctx, node, y, back)


CONVERTERS = {
    **{op: _reduction(op) for op in (*_REDUCTIONS, "ReduceLogSumExp")},
    "ArgMax": _arg_reduce(largest=True), "ArgMin": _arg_reduce(largest=False),
    "TopK": topk, "CumSum": cumsum,
}
