"""Data-movement ops (all injective).

- RESHAPE newshape: fully static, same element count.
- TRANSPOSE perm: a permutation of range(rank).
- SLICE begin/end/step: one entry per axis, already normalized to Python
  range() semantics (end may be -1 for a negative step: "past index 0").
- CONCAT axis (non-negative); inputs share dtype and every other dim.
- TAKE axis: src (data, indices); numpy.take after wrapping negative indices.
- BROADCAST_TO shape: numpy broadcasting of the input against `shape` (ONNX
  Expand: the result has the broadcast of both, so a 1 in `shape` keeps the
  input's dim).
- PAD pads: ONNX order (all begins, then all ends), non-negative; mode
  "constant" | "reflect" | "edge" | "wrap"; value for constant mode.
- LAYOUT_TRANSFORM src_layout/dst_layout: layout strings whose upper-case
  letters are primal axes and "<n><lower>" a sub-axis of block n, e.g.
  "NCHW" <-> "NCHW16c", "OIHW" <-> "OIHW16i16o" (TVM's notation).
"""

from __future__ import annotations

import re

import numpy as np

from ..errors import GraphError
from ..ops import Kind, Op
from ..registry import register


@register(Op.RESHAPE, Kind.INJECTIVE, 1)
def _reshape():
    def infer(src, a):
        new = tuple(a["newshape"])
        if any(d <= 0 for d in new) or int(np.prod(new)) != int(np.prod(src[0].shape)):
            raise GraphError(f"newshape {list(new)} does not hold the {int(np.prod(src[0].shape))} "
                             f"elements of {list(src[0].shape)}")
        return new, src[0].dtype
    return infer, lambda args, a: args[0].reshape(a["newshape"])


@register(Op.TRANSPOSE, Kind.INJECTIVE, 1)
def _transpose():
    def infer(src, a):
        perm = a["perm"]
        if sorted(perm) != list(range(len(src[0].shape))):
            raise GraphError(f"perm {list(perm)} is not a permutation of the {len(src[0].shape)} axes")
        return tuple(src[0].shape[p] for p in perm), src[0].dtype
    return infer, lambda args, a: np.ascontiguousarray(np.transpose(args[0], a["perm"]))


def _slices(a):
    return tuple(slice(b, None if e < 0 else e, s) for b, e, s in zip(a["begin"], a["end"], a["step"]))


@register(Op.SLICE, Kind.INJECTIVE, 1)
def _slice():
    def infer(src, a):
        shape = src[0].shape
        if not len(a["begin"]) == len(a["end"]) == len(a["step"]) == len(shape):
            raise GraphError(f"begin/end/step need one entry per axis ({len(shape)})")
        out = []
        for d, b, e, s in zip(shape, a["begin"], a["end"], a["step"]):
            if s == 0 or not 0 <= b <= d or not -1 <= e <= d:
                raise GraphError(f"slice {b}:{e}:{s} is not normalized for a dim of {d}")
            out.append(len(range(b, e, s)))
        if 0 in out:
            raise GraphError(f"slice produces an empty tensor {out}; empty tensors are not supported")
        return tuple(out), src[0].dtype
    return infer, lambda args, a: np.ascontiguousarray(args[0][_slices(a)])


@register(Op.CONCAT, Kind.INJECTIVE, (1, 1 << 16))
def _concat():
    def infer(src, a):
        axis, first = a["axis"], src[0]
        for s in src[1:]:
            if s.dtype != first.dtype or len(s.shape) != len(first.shape) or any(
                    x != y for i, (x, y) in enumerate(zip(s.shape, first.shape)) if i != axis):
                raise GraphError(f"cannot concatenate {s.dtype}{list(s.shape)} with "
                                 f"{first.dtype}{list(first.shape)} on axis {axis}")
        shape = list(first.shape)
        shape[axis] = sum(s.shape[axis] for s in src)
        return tuple(shape), first.dtype
    return infer, lambda args, a: np.concatenate(args, axis=a["axis"])


@register(Op.TAKE, Kind.INJECTIVE, 2)
def _take():
    def infer(src, a):
        data, idx = src
        if not np.issubdtype(np.dtype(idx.dtype), np.integer):
            raise GraphError(f"indices must be integers, not {idx.dtype}")
        ax = a["axis"]
        return data.shape[:ax] + idx.shape + data.shape[ax + 1:], data.dtype

    def compute(args, a):
        data, idx = args
        dim = data.shape[a["axis"]]
        idx = np.where(idx < 0, idx + dim, idx)
        return np.take(data, idx, axis=a["axis"])
    return infer, compute


@register(Op.BROADCAST_TO, Kind.INJECTIVE, 1)
def _broadcast_to():
    from .elementwise import broadcast_shape

    def infer(src, a):
        return broadcast_shape(src[0].shape, tuple(a["shape"])), src[0].dtype

    def compute(args, a):
        return np.ascontiguousarray(np.broadcast_to(args[0], np.broadcast_shapes(args[0].shape, tuple(a["shape"]))))
    return infer, compute


@register(Op.PAD, Kind.INJECTIVE, 1)
def _pad():
    def infer(src, a):
        pads, rank = a["pads"], len(src[0].shape)
        if len(pads) != 2 * rank or any(p < 0 for p in pads):
            raise GraphError(f"pads must be {2 * rank} non-negative ints (begins then ends), not {list(pads)}")
        if a.get("mode", "constant") not in ("constant", "reflect", "edge", "wrap"):
            raise GraphError(f"mode must be constant, reflect, edge or wrap, not {a['mode']!r}")
        return tuple(d + pads[i] + pads[i + rank] for i, d in enumerate(src[0].shape)), src[0].dtype

    def compute(args, a):
        x, pads, rank = args[0], a["pads"], args[0].ndim
        width = [(pads[i], pads[i + rank]) for i in range(rank)]
        mode = a.get("mode", "constant")
        if mode == "constant":
            return np.pad(x, width, constant_values=np.asarray(a.get("value", 0.0)).astype(x.dtype))
        return np.pad(x, width, mode=mode)
    return infer, compute


_TOKEN = re.compile(r"(\d*)([A-Za-z])")


def parse_layout(layout: str) -> list[tuple[str, int]]:
    """'NCHW16c' -> [('N',0),('C',0),('H',0),('W',0),('c',16)]; GraphError if malformed."""
    toks = [(ch, int(n) if n else 0) for n, ch in _TOKEN.findall(layout)]
    if "".join(f"{n or ''}{c}" for c, n in toks) != layout or any(
            (c.islower()) != (n > 0) for c, n in toks) or any(
            c.islower() and c.upper() not in dict(toks) for c, n in toks):
        raise GraphError(f"layout {layout!r} is malformed; use primal axes in upper case and "
                         "'<block><lower>' sub-axes, e.g. 'NCHW16c'")
    return toks


def _layout_shapes(shape, src_layout, dst_layout):
    src, dst = parse_layout(src_layout), parse_layout(dst_layout)
    if sorted(c for c, _ in src if c.isupper()) != sorted(c for c, _ in dst if c.isupper()):
        raise GraphError(f"layouts {src_layout!r} and {dst_layout!r} have different primal axes")
    if len(shape) != len(src):
        raise GraphError(f"shape {list(shape)} has rank {len(shape)}, layout {src_layout!r} needs {len(src)}")
    primal = {}
    for (c, _), d in zip(src, shape):
        if c.isupper():
            primal[c] = primal.get(c, 1) * d
        else:
            primal[c.upper()] = primal.get(c.upper(), 1) * d
    blocks = {c.upper(): n for c, n in dst if n}
    out = []
    for c, n in dst:
        if c.isupper():
            b = blocks.get(c, 1)
            if primal[c] % b:
                raise GraphError(f"axis {c} of size {primal[c]} is not divisible by block {b} of {dst_layout!r}")
            out.append(primal[c] // b)
        else:
            out.append(n)
    return src, dst, primal, tuple(out)


def layout_transform(x: np.ndarray, src_layout: str, dst_layout: str) -> np.ndarray:
    """Move `x` from `src_layout` to `dst_layout` (numpy reference)."""
    src, dst, primal, out_shape = _layout_shapes(x.shape, src_layout, dst_layout)
    letters = [c for c, _ in src if c.isupper()]
    # to primal order of src: each primal axis followed by its sub-axis
    perm = []
    for c in letters:
        perm.append(next(i for i, (t, _) in enumerate(src) if t == c))
        perm += [i for i, (t, _) in enumerate(src) if t == c.lower()]
    y = np.transpose(x, perm).reshape([primal[c] for c in letters])
    dst_letters = [c for c, _ in dst if c.isupper()]
    y = np.transpose(y, [letters.index(c) for c in dst_letters])
    blocks = {c.upper(): n for c, n in dst if n}
    split = []
    for c in dst_letters:
        split += [primal[c] // blocks[c], blocks[c]] if c in blocks else [primal[c]]
    y = y.reshape(split)
    names = []
    for c in dst_letters:
        names += [c, c.lower()] if c in blocks else [c]
    return np.ascontiguousarray(np.transpose(y, [names.index(c) for c, _ in dst])).reshape(out_shape)


@register(Op.LAYOUT_TRANSFORM, Kind.INJECTIVE, 1)
def _layout_transform():
    def infer(src, a):
        return _layout_shapes(src[0].shape, a["src_layout"], a["dst_layout"])[3], src[0].dtype
    return infer, lambda args, a: layout_transform(args[0], a["src_layout"], a["dst_layout"])
