"""QUANTIZE / DEQUANTIZE (ONNX QuantizeLinear / DequantizeLinear semantics).

- QUANTIZE src (x float, scale, zero_point); axis, to ("uint8"|"int8"|...):
  saturate(round_half_even(x / scale) + zero_point) in `to`.
- DEQUANTIZE src (x int, scale, zero_point); axis: (x - zero_point) * scale,
  in scale's dtype.
scale / zero_point are scalars (per-tensor) or 1-D of length x.shape[axis]
(per-axis). Both are injective.
"""

from __future__ import annotations

import numpy as np

from ..errors import GraphError
from ..ops import Kind, Op
from ..registry import register


def _per_axis(v: np.ndarray, x: np.ndarray, axis: int) -> np.ndarray:
    if v.size == 1:
        return v.reshape(())
    shape = [1] * x.ndim
    shape[axis] = v.size
    return v.reshape(shape)


def _check(src, a):
    x, scale, zp = src
    axis = a.get("axis", 1)
    for t in (scale, zp):
        n = int(np.prod(t.shape))
        if n != 1 and (len(t.shape) != 1 or not 0 <= axis < len(x.shape) or n != x.shape[axis]):
            raise GraphError(f"scale/zero_point {list(t.shape)} must be a scalar or [{x.shape[axis] if 0 <= axis < len(x.shape) else '?'}]"
                             f" along axis {axis} of x {list(x.shape)}")


@register(Op.QUANTIZE, Kind.INJECTIVE, 3)
def _quantize():
    def infer(src, a):
        _check(src, a)
        return src[0].shape, a["to"]

    def compute(args, a):
        x, scale, zp = args
        ax = a.get("axis", 1)
        info = np.iinfo(a["to"])
        q = np.rint(x.astype(np.float32) / _per_axis(scale, x, ax).astype(np.float32))
        q = q + _per_axis(zp, x, ax).astype(np.float32)
        return np.clip(q, info.min, info.max).astype(a["to"])
    return infer, compute


@register(Op.DEQUANTIZE, Kind.INJECTIVE, 3)
def _dequantize():
    def infer(src, a):
        _check(src, a)
        return src[0].shape, src[1].dtype

    def compute(args, a):
        x, scale, zp = args
        ax = a.get("axis", 1)
        diff = x.astype(np.int64) - _per_axis(zp, x, ax).astype(np.int64)
        return (diff.astype(np.float32) * _per_axis(scale, x, ax)).astype(scale.dtype)
    return infer, compute
