"""Shape and data movement: view/reshape, permute, unsqueeze/squeeze, expand, cat, split, slice,
select, index_select/embedding, constant_pad_nd, mean/sum over axes, and constant makers
(full, zeros, ones, scalar_tensor) that fold into params."""

from __future__ import annotations

import sys

import numpy as np

from ...graph.ops import Op


def _axis(ctx, n, dim, rank):
    dim = int(dim)
    if not -rank <= dim < rank:
        raise ctx.fail(n, f"dim {dim} is out of range for rank {rank}")
    return dim % rank


def view(ctx, n):
    a = ctx.args(n)
    x = a["self"]
    shape = [int(d) for d in (a.get("size") if "size" in a else a["shape"])]
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1]))
        shape[shape.index(-1)] = int(np.prod(x.shape)) // max(known, 1)
    return x if tuple(shape) == x.shape else ctx.make(n, Op.RESHAPE, x, newshape=tuple(shape))


def permute(ctx, n):
    a = ctx.args(n)
    x = a["self"]
    perm = tuple(_axis(ctx, n, d, len(x.shape)) for d in a["dims"])
    return ctx.make(n, Op.TRANSPOSE, x, perm=perm)


def t(ctx, n):
    return ctx.make(n, Op.TRANSPOSE, ctx.args(n)["self"], perm=(1, 0))


def transpose(ctx, n):
    a = ctx.args(n)
    x = a["self"]
    perm = list(range(len(x.shape)))
    i, j = _axis(ctx, n, a["dim0"], len(perm)), _axis(ctx, n, a["dim1"], len(perm))
    perm[i], perm[j] = perm[j], perm[i]
    return ctx.make(n, Op.TRANSPOSE, x, perm=tuple(perm))


def unsqueeze(ctx, n):
    a = ctx.args(n)
    x = a["self"]
    shape = list(x.shape)
    shape.insert(_axis(ctx, n, a["dim"], len(shape) + 1), 1)
    return ctx.make(n, Op.RESHAPE, x, newshape=tuple(shape))


def squeeze(ctx, n):
    a = ctx.args(n)
    x = a["self"]
    dims = a.get("dim", None)
    dims = range(len(x.shape)) if dims is None else dims if isinstance(dims, (list, tuple)) else [dims]
    drop = {_axis(ctx, n, d, len(x.shape)) for d in dims}
    shape = tuple(d for i, d in enumerate(x.shape) if not (i in drop and d == 1))
    return x if shape == x.shape else ctx.make(n, Op.RESHAPE, x, newshape=shape)


def expand(ctx, n):
    """expand: a broadcast, done as ADD with a zero constant of the target shape."""
    a = ctx.args(n)
    x = a["self"]
    size = [int(s) for s in a["size"]]
    lead = len(size) - len(x.shape)
    size = [x.shape[i - lead] if s == -1 else s for i, s in enumerate(size)]
    if tuple(size) == x.shape:
        return x
    zeros = ctx.param(np.zeros(size, np.dtype(x.dtype)), f"{n.name}_zeros")
    return ctx.make(n, Op.ADD, x, zeros)


def cat(ctx, n):
    a = ctx.args(n)
    src = [t for t in a["tensors"] if t is not None]
    axis = _axis(ctx, n, a["dim"], len(src[0].shape))
    return src[0] if len(src) == 1 else ctx.make(n, Op.CONCAT, *src, axis=axis)


def _slice(ctx, n, x, axis, start, stop, step=1):
    if (start, stop, step) == (0, x.shape[axis], 1):
        return x
    begin, end, steps = [0] * len(x.shape), list(x.shape), [1] * len(x.shape)
    begin[axis], end[axis], steps[axis] = start, stop, step
    return ctx.make(n, Op.SLICE, x, begin=tuple(begin), end=tuple(end), step=tuple(steps))


def slice_(ctx, n):
    """slice.Tensor: Python slicing rules on one dim (None and huge ends clamp)."""
    a = ctx.args(n)
    x = a["self"]
    axis = _axis(ctx, n, a["dim"], len(x.shape))
    start = 0 if a.get("start") is None else int(a["start"])
    end = sys.maxsize if a.get("end") is None else int(a["end"])
    step = int(a.get("step", 1))
    start, stop, step = slice(start, end, step).indices(x.shape[axis])
    if len(range(start, stop, step)) == 0:
        raise ctx.fail(n, f"slice {a.get('start')}:{a.get('end')}:{step} of dim {axis} (size "
                          f"{x.shape[axis]}) is empty; empty tensors are not supported")
    return _slice(ctx, n, x, axis, start, stop, step)


def split(ctx, n):
    """split.Tensor / split_with_sizes: a tuple of slices."""
    a = ctx.args(n)
    x = a["self"]
    axis = _axis(ctx, n, a["dim"], len(x.shape))
    dim = x.shape[axis]
    sizes = a.get("split_sizes")
    if sizes is None:
        size = int(a["split_size"])
        sizes = [min(size, dim - i) for i in range(0, dim, size)]
    if sum(sizes) != dim:
        raise ctx.fail(n, f"split sizes {list(sizes)} must sum to dim {dim} along axis {axis}")
    outs, start = [], 0
    for s in sizes:
        outs.append(_slice(ctx, n, x, axis, start, start + int(s)))
        start += int(s)
    return tuple(outs)


def select(ctx, n):
    """select.int: a one-wide slice, its axis dropped."""
    a = ctx.args(n)
    x = a["self"]
    axis = _axis(ctx, n, a["dim"], len(x.shape))
    i = int(a["index"])
    if not -x.shape[axis] <= i < x.shape[axis]:
        raise ctx.fail(n, f"index {i} is out of range for dim {axis} of size {x.shape[axis]}")
    i %= x.shape[axis]
    y = _slice(ctx, n, x, axis, i, i + 1)
    return ctx.make(n, Op.RESHAPE, y, newshape=x.shape[:axis] + x.shape[axis + 1:])


def index_select(ctx, n):
    a = ctx.args(n)
    x, idx = a["self"], a["index"]
    return ctx.make(n, Op.TAKE, x, idx, axis=_axis(ctx, n, a["dim"], len(x.shape)))


def embedding(ctx, n):
    a = ctx.args(n)
    return ctx.make(n, Op.TAKE, a["weight"], a["indices"], axis=0)


def constant_pad(ctx, n):
    """constant_pad_nd: torch's pad lists the last dim first; PAD wants begins then ends."""
    a = ctx.args(n)
    x = a["self"]
    pad, rank = [int(p) for p in a["pad"]], len(x.shape)
    if any(p < 0 for p in pad):
        raise ctx.fail(n, f"negative pads {pad} (cropping) are not supported; slice instead")
    begins, ends = [0] * rank, [0] * rank
    for k in range(len(pad) // 2):
        begins[rank - 1 - k], ends[rank - 1 - k] = pad[2 * k], pad[2 * k + 1]
    if not any(pad):
        return x
    return ctx.make(n, Op.PAD, x, pads=tuple(begins + ends), mode="constant", value=float(a["value"]))


def _reduce_axes(ctx, n, x, dims):
    dims = range(len(x.shape)) if not dims else dims
    return tuple(sorted({_axis(ctx, n, d, len(x.shape)) for d in dims}))


def mean(ctx, n):
    a = ctx.args(n)
    x = a["self"]
    return ctx.make(n, Op.REDUCE_MEAN, x, axes=_reduce_axes(ctx, n, x, a.get("dim")),
                    keepdims=int(a.get("keepdim", False)))


def sum_(ctx, n):
    """sum over axes = mean times the count."""
    a = ctx.args(n)
    x = a["self"]
    axes = _reduce_axes(ctx, n, x, a.get("dim"))
    m = ctx.make(n, Op.REDUCE_MEAN, x, axes=axes, keepdims=int(a.get("keepdim", False)))
    count = int(np.prod([x.shape[i] for i in axes]))
    return ctx.make(n, Op.MUL, m, ctx.tensor(n, float(count), m, "count"))


def _np_dtype(dtype, value):
    import torch
    if dtype is None:
        dtype = torch.float32 if isinstance(value, float) else torch.int64
    return np.dtype(torch.empty((), dtype=dtype).numpy().dtype)


def full(ctx, n):
    a = ctx.args(n)
    return _filled(ctx, n, a, a["fill_value"])


def _constant(fill):
    """zeros / ones: ``full`` with a fixed value."""
    return lambda ctx, n: _filled(ctx, n, ctx.args(n), fill)


def _filled(ctx, n, a, value):
    return ctx.param(np.full([int(s) for s in a["size"]], value, _np_dtype(a.get("dtype"), value)),
                     f"{n.name}_value")


def full_like(ctx, n):
    a = ctx.args(n)
    x = a["self"]
    dtype = np.dtype(x.dtype) if a.get("dtype") is None else _np_dtype(a["dtype"], a["fill_value"])
    return ctx.param(np.full(x.shape, a["fill_value"], dtype), f"{n.name}_value")


def scalar_tensor(ctx, n):
    a = ctx.args(n)
    return ctx.param(np.asarray(a["s"], _np_dtype(a.get("dtype"), float(a["s"]))), f"{n.name}_value")


CONVERTERS = {
    "aten.view.default": view, "aten._unsafe_view.default": view, "aten.reshape.default": view,
    "aten.permute.default": permute, "aten.t.default": t,
    "aten.transpose.int": transpose, "aten.unsqueeze.default": unsqueeze,
    "aten.squeeze.dims": squeeze, "aten.squeeze.dim": squeeze, "aten.squeeze.default": squeeze,
    "aten.expand.default": expand, "aten.cat.default": cat, "aten.slice.Tensor": slice_,
    "aten.split.Tensor": split, "aten.split_with_sizes.default": split,
    "aten.select.int": select, "aten.index_select.default": index_select,
    "aten.embedding.default": embedding, "aten.constant_pad_nd.default": constant_pad,
    "aten.mean.dim": mean, "aten.sum.dim_IntList": sum_,
    "aten.full.default": full, "aten.zeros.default": _constant(0.0),
    "aten.ones.default": _constant(1.0),
    "aten.full_like.default": full_like, "aten.scalar_tensor.default": scalar_tensor,
}
