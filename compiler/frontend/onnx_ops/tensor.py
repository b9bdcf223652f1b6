"""Shape and data-movement ops: Flatten, Reshape, Transpose, Concat, Split, Slice, Gather,
Squeeze, Unsqueeze, Pad, Expand, Tile, DepthToSpace, SpaceToDepth, OneHot, and the constant
producers Shape, ConstantOfShape, Constant, Range.

Tile, DepthToSpace and SpaceToDepth are reshapes, transposes and broadcasts;
OneHot is a comparison against an index table and a WHERE.

Attribute-vs-input forms across opsets are both accepted (Split sizes,
Squeeze/Unsqueeze axes, Pad pads, Slice starts/ends).
"""

from __future__ import annotations

import numpy as np

from ...graph.ops import Op


def _axes(ctx, node, axes, rank, what="axes"):
    out = []
    for ax in axes:
        ax = int(ax)
        if not -rank <= ax < rank:
            raise ctx.fail(node, f"{what} entry {ax} is out of range for rank {rank}")
        out.append(ax % rank)
    return out


def _attr_or_input(ctx, node, a, name, index):
    """Value given as attribute `name` (older opsets) or constant input `index` (newer); None if neither."""
    if name in a:
        return list(a[name])
    v = ctx.const(node, index, name)
    return None if v is None else [int(t) for t in np.asarray(v).reshape(-1)]


def flatten(ctx, node, a):
    x = ctx.required(node, 0)
    axis = int(a.get("axis", 1)) % (len(x.shape) + 1) if x.shape else 0
    shape = (int(np.prod(x.shape[:axis])), int(np.prod(x.shape[axis:])))
    return ctx.make(node, Op.RESHAPE, x, newshape=shape)


def reshape(ctx, node, a):
    x = ctx.required(node, 0)
    shape = [int(v) for v in ctx.const(node, 1, "shape").reshape(-1)]
    if not a.get("allowzero", 0):
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    if shape.count(-1) > 1:
        raise ctx.fail(node, f"shape {shape} has more than one -1")
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1]))
        shape[shape.index(-1)] = int(np.prod(x.shape)) // max(known, 1)
    return ctx.make(node, Op.RESHAPE, x, newshape=tuple(shape))


def transpose(ctx, node, a):
    x = ctx.required(node, 0)
    perm = tuple(a.get("perm", range(len(x.shape) - 1, -1, -1)))
    return ctx.make(node, Op.TRANSPOSE, x, perm=perm)


def concat(ctx, node, a):
    src = [ctx.required(node, i) for i in range(len(node.input)) if node.input[i]]
    axis = _axes(ctx, node, [a["axis"]], len(src[0].shape), "axis")[0]
    return ctx.make(node, Op.CONCAT, *src, axis=axis)


def _slice_node(ctx, node, x, ranges):
    """SLICE over per-axis (begin, end, step) in range() form."""
    begin, end, step = zip(*ranges)
    if all(b == 0 and e == d and s == 1 for (b, e, s), d in zip(ranges, x.shape)):
        return x
    return ctx.make(node, Op.SLICE, x, begin=begin, end=end, step=step)


def split(ctx, node, a):
    x = ctx.required(node, 0)
    axis = _axes(ctx, node, [a.get("axis", 0)], len(x.shape), "axis")[0]
    sizes = _attr_or_input(ctx, node, a, "split", 1)
    n_out, dim = len(node.output), x.shape[axis]
    if sizes is None:
        n = int(a.get("num_outputs", n_out))
        chunk = -(-dim // n)
        sizes = [min(chunk, dim - i * chunk) for i in range(n)]
    if sum(sizes) != dim or len(sizes) != n_out:
        raise ctx.fail(node, f"split sizes {sizes} must sum to dim {dim} along axis {axis} and match "
                             f"{n_out} outputs")
    outs, start = [], 0
    for s in sizes:
        ranges = [(0, d, 1) for d in x.shape]
        ranges[axis] = (start, start + s, 1)
        outs.append(_slice_node(ctx, node, x, ranges))
        start += s
    return tuple(outs)


def normalize_slice(dim: int, start: int, end: int, step: int) -> tuple[int, int, int]:
    """ONNX Slice clamping rules -> (begin, end, step) for Python's range()."""
    if start < 0:
        start += dim
    if end < 0:
        end += dim
    if step > 0:
        return min(max(start, 0), dim), min(max(end, 0), dim), step
    return min(max(start, 0), dim - 1), min(max(end, -1), dim - 1), step


def slice_(ctx, node, a):
    x = ctx.required(node, 0)
    rank = len(x.shape)
    if ctx.opset < 10 or "starts" in a:
        starts, ends, axes, steps = a["starts"], a["ends"], a.get("axes"), None
    else:
        starts = ctx.const(node, 1, "starts").reshape(-1).tolist()
        ends = ctx.const(node, 2, "ends").reshape(-1).tolist()
        axes = ctx.const(node, 3, "axes")
        axes = None if axes is None else axes.reshape(-1).tolist()
        steps = ctx.const(node, 4, "steps")
        steps = None if steps is None else steps.reshape(-1).tolist()
    axes = _axes(ctx, node, axes if axes is not None else range(len(starts)), rank)
    steps = steps if steps is not None else [1] * len(axes)
    if 0 in steps:
        raise ctx.fail(node, "steps must be non-zero")
    ranges = [(0, d, 1) for d in x.shape]
    for ax, s, e, st in zip(axes, starts, ends, steps):
        ranges[ax] = normalize_slice(x.shape[ax], int(s), int(e), int(st))
        if len(range(*ranges[ax])) == 0:
            raise ctx.fail(node, f"slice {s}:{e}:{st} on axis {ax} (dim {x.shape[ax]}) is empty; "
                                 "empty tensors are not supported")
    return _slice_node(ctx, node, x, ranges)


def gather(ctx, node, a):
    x, idx = ctx.required(node, 0), ctx.required(node, 1)
    axis = _axes(ctx, node, [a.get("axis", 0)], len(x.shape), "axis")[0]
    if idx.op is Op.PARAM:
        v = ctx.params[idx.name]
        if ((v < -x.shape[axis]) | (v >= x.shape[axis])).any():
            raise ctx.fail(node, f"indices {v.reshape(-1).tolist()} out of range for dim {x.shape[axis]}")
    return ctx.make(node, Op.TAKE, x, idx, axis=axis)


def squeeze(ctx, node, a):
    x = ctx.required(node, 0)
    axes = _attr_or_input(ctx, node, a, "axes", 1)
    axes = [i for i, d in enumerate(x.shape) if d == 1] if axes is None else _axes(ctx, node, axes, len(x.shape))
    if any(x.shape[i] != 1 for i in axes):
        raise ctx.fail(node, f"cannot squeeze axes {axes} of shape {list(x.shape)}: dims must be 1")
    return ctx.make(node, Op.RESHAPE, x, newshape=tuple(d for i, d in enumerate(x.shape) if i not in axes))


def unsqueeze(ctx, node, a):
    x = ctx.required(node, 0)
    axes = _attr_or_input(ctx, node, a, "axes", 1)
    if axes is None:
        raise ctx.fail(node, "axes are required")
    rank = len(x.shape) + len(axes)
    axes = set(_axes(ctx, node, axes, rank))
    dims = iter(x.shape)
    return ctx.make(node, Op.RESHAPE, x, newshape=tuple(1 if i in axes else next(dims) for i in range(rank)))


def pad(ctx, node, a):
    x = ctx.required(node, 0)
    rank = len(x.shape)
    pads = _attr_or_input(ctx, node, a, "pads", 1)
    value = a.get("value", 0.0)
    v = ctx.const(node, 2, "constant_value")
    if v is not None and v.size:
        value = float(v.reshape(-1)[0])
    axes = ctx.const(node, 3, "axes")
    if axes is not None:
        axes = _axes(ctx, node, axes.reshape(-1).tolist(), rank)
        full = [0] * 2 * rank
        for k, ax in enumerate(axes):
            full[ax], full[ax + rank] = pads[k], pads[k + len(axes)]
        pads = full
    if pads is None or len(pads) != 2 * rank:
        raise ctx.fail(node, f"pads must have {2 * rank} entries (begins then ends), not {pads}")
    if any(p < 0 for p in pads):
        raise ctx.fail(node, f"negative pads {pads} (cropping) are not supported; use Slice")
    mode = a.get("mode", "constant")
    if not any(pads):
        return x
    return ctx.make(node, Op.PAD, x, pads=tuple(pads), mode=mode, value=float(value))


def expand(ctx, node, a):
    x = ctx.required(node, 0)
    shape = tuple(int(d) for d in ctx.const(node, 1, "shape").reshape(-1))
    out = ctx.make(node, Op.BROADCAST_TO, x, shape=shape)
    return x if out.shape == x.shape else out


def tile(ctx, node, a):
    """x [.., d, ..] -> [.., 1, d, ..] broadcast to [.., r, d, ..] -> [.., r*d, ..]."""
    x = ctx.required(node, 0)
    reps = [int(r) for r in ctx.const(node, 1, "repeats").reshape(-1)]
    if len(reps) != len(x.shape) or any(r < 1 for r in reps):
        raise ctx.fail(node, f"repeats {reps} must hold one positive count per axis of {list(x.shape)}")
    if all(r == 1 for r in reps):
        return x
    spread = tuple(v for d in x.shape for v in (1, d))
    wide = tuple(v for r, d in zip(reps, x.shape) for v in (r, d))
    y = ctx.make(node, Op.BROADCAST_TO, ctx.make(node, Op.RESHAPE, x, newshape=spread), shape=wide)
    return ctx.make(node, Op.RESHAPE, y, newshape=tuple(r * d for r, d in zip(reps, x.shape)))


def _blocksize(ctx, node, a, x):
    b = int(a.get("blocksize", 0))
    if len(x.shape) != 4 or b < 1:
        raise ctx.fail(node, f"needs a 4-D NCHW input and a positive blocksize, not {list(x.shape)} and {b}")
    return b


def depth_to_space(ctx, node, a):
    x = ctx.required(node, 0)
    b = _blocksize(ctx, node, a, x)
    n, c, h, w = x.shape
    if c % (b * b):
        raise ctx.fail(node, f"channels {c} must divide by blocksize^2 = {b * b}")
    if a.get("mode", "DCR") == "DCR":
        t = ctx.make(node, Op.RESHAPE, x, newshape=(n, b, b, c // (b * b), h, w))
        t = ctx.make(node, Op.TRANSPOSE, t, perm=(0, 3, 4, 1, 5, 2))
    else:  # CRD
        t = ctx.make(node, Op.RESHAPE, x, newshape=(n, c // (b * b), b, b, h, w))
        t = ctx.make(node, Op.TRANSPOSE, t, perm=(0, 1, 4, 2, 5, 3))
    return ctx.make(node, Op.RESHAPE, t, newshape=(n, c // (b * b), h * b, w * b))


def space_to_depth(ctx, node, a):
    x = ctx.required(node, 0)
    b = _blocksize(ctx, node, a, x)
    n, c, h, w = x.shape
    if h % b or w % b:
        raise ctx.fail(node, f"height {h} and width {w} must divide by blocksize {b}")
    t = ctx.make(node, Op.RESHAPE, x, newshape=(n, c, h // b, b, w // b, b))
    t = ctx.make(node, Op.TRANSPOSE, t, perm=(0, 3, 5, 1, 2, 4))
    return ctx.make(node, Op.RESHAPE, t, newshape=(n, c * b * b, h // b, w // b))


def one_hot(ctx, node, a):
    """values[1] where indices (negative ones counted from depth) == position along `axis`, else values[0]."""
    idx = ctx.required(node, 0)
    depth = int(np.asarray(ctx.const(node, 1, "depth")).reshape(-1)[0])
    values = ctx.const(node, 2, "values")
    if depth < 1 or values is None or values.size != 2:
        raise ctx.fail(node, f"depth must be positive and values [off, on], not {depth} and {values}")
    rank = len(idx.shape) + 1
    axis = _axes(ctx, node, [a.get("axis", -1)], rank, "axis")[0]
    hint = node.name or "onehot"
    zero = ctx.param(np.zeros((), idx.dtype), f"{hint}_zero")
    wrapped = ctx.make(node, Op.WHERE, ctx.make(node, Op.LESS, idx, zero),
                       ctx.make(node, Op.ADD, idx, ctx.param(np.asarray(depth, idx.dtype), f"{hint}_depth")), idx)
    shape = list(idx.shape)
    shape.insert(axis, 1)
    table = [1] * rank
    table[axis] = depth
    hit = ctx.make(node, Op.EQUAL, ctx.make(node, Op.RESHAPE, wrapped, newshape=tuple(shape)),
                   ctx.param(np.arange(depth, dtype=idx.dtype).reshape(table), f"{hint}_positions"))
    off, on = (ctx.param(np.asarray(v), f"{hint}_{k}") for k, v in zip(("off", "on"), values.reshape(-1)))
    return ctx.make(node, Op.WHERE, hit, on, off)


def range_(ctx, node, a):
    start, limit, delta = (np.asarray(ctx.const(node, i, w)) for i, w in enumerate(("start", "limit", "delta")))
    if delta == 0:
        raise ctx.fail(node, "delta must be non-zero")
    return ctx.param(np.arange(start, limit, delta, dtype=start.dtype), f"{node.name or 'range'}_value")


def shape(ctx, node, a):
    x = ctx.required(node, 0)
    dims = np.asarray(x.shape, np.int64)
    start, end = int(a.get("start", 0)), a.get("end")
    return ctx.param(dims[start:None if end is None else int(end)], f"{node.name or 'shape'}_value")


def constant_of_shape(ctx, node, a):
    dims = [int(d) for d in ctx.const(node, 0, "shape").reshape(-1)]
    value = a.get("value", np.zeros(1, np.float32))
    return ctx.param(np.full(dims, np.asarray(value).reshape(-1)[0], dtype=value.dtype), f"{node.name or 'const'}_value")


def constant(ctx, node, a):
    for key, dtype in (("value", None), ("value_float", np.float32), ("value_floats", np.float32),
                       ("value_int", np.int64), ("value_ints", np.int64)):
        if key in a:
            return ctx.param(np.asarray(a[key], dtype=dtype), node.output[0])
    raise ctx.fail(node, f"unsupported Constant attribute(s) {sorted(a)}; use value, value_float(s) or value_int(s)")


CONVERTERS = {
    "Flatten": flatten, "Reshape": reshape, "Transpose": transpose, "Concat": concat, "Split": split,
    "Slice": slice_, "Gather": gather, "Squeeze": squeeze, "Unsqueeze": unsqueeze, "Pad": pad,
    "Expand": expand, "Tile": tile, "DepthToSpace": depth_to_space, "SpaceToDepth": space_to_depth,
    "OneHot": one_hot, "Range": range_, "Shape": shape, "ConstantOfShape": constant_of_shape, "Constant": constant,
}
