"""Normalization ops.

- BATCH_NORM src (x[N,C,...], gamma[C], beta[C], mean[C], var[C]); epsilon.
  Inference form: (x - mean) / sqrt(var + eps) * gamma + beta. Injective.
- LAYER_NORM src (x, scale[, bias]); axis (non-negative), epsilon: normalizes
  over axes [axis, rank) with biased variance; scale/bias broadcast. Opaque.
- SOFTMAX axis (non-negative): exp(x - max) / sum over one axis. Opaque
  (TVM marks softmax opaque: the max and sum are two reductions).
"""

from __future__ import annotations

import numpy as np

from ..errors import GraphError
from ..ops import Kind, Op
from ..registry import register
from .elementwise import broadcast_shape


def _channel_shape(x: np.ndarray) -> tuple[int, ...]:
    return (x.shape[1],) + (1,) * (x.ndim - 2)


@register(Op.BATCH_NORM, Kind.INJECTIVE, 5)
def _batch_norm():
    def infer(src, a):
        x = src[0].shape
        if len(x) < 2 or any(s.shape != (x[1],) for s in src[1:]):
            raise GraphError(f"gamma/beta/mean/var must all be [{x[1] if len(x) > 1 else '?'}] for x {list(x)}, "
                             f"got {[list(s.shape) for s in src[1:]]}")
        return x, src[0].dtype

    def compute(args, a):
        x, gamma, beta, mean, var = args
        cs = _channel_shape(x)
        scale = gamma / np.sqrt(var + np.asarray(a["epsilon"], var.dtype))
        return ((x - mean.reshape(cs)) * scale.reshape(cs) + beta.reshape(cs)).astype(x.dtype)
    return infer, compute


@register(Op.LAYER_NORM, Kind.OPAQUE, (2, 3))
def _layer_norm():
    def infer(src, a):
        x, axis = src[0].shape, a["axis"]
        if not 0 <= axis < len(x):
            raise GraphError(f"axis {axis} out of range for rank {len(x)}")
        for s in src[1:]:
            if broadcast_shape(x, s.shape) != x:
                raise GraphError(f"scale/bias {list(s.shape)} must broadcast to x {list(x)}")
        return x, src[0].dtype

    def compute(args, a):
        x = args[0]
        axes = tuple(range(a["axis"], x.ndim))
        mean = x.mean(axis=axes, keepdims=True)
        var = np.square(x - mean).mean(axis=axes, keepdims=True)
        y = (x - mean) / np.sqrt(var + np.asarray(a["epsilon"], x.dtype)) * args[1]
        if len(args) > 2:
            y = y + args[2]
        return y.astype(x.dtype)
    return infer, compute


@register(Op.SOFTMAX, Kind.OPAQUE, 1)
def _softmax():
    def infer(src, a):
        if not 0 <= a["axis"] < len(src[0].shape):
            raise GraphError(f"axis {a['axis']} out of range for rank {len(src[0].shape)}")
        return src[0].shape, src[0].dtype

    def compute(args, a):
        x = args[0]
        e = np.exp(x - x.max(axis=a["axis"], keepdims=True))
        return (e / e.sum(axis=a["axis"], keepdims=True)).astype(x.dtype)
    return infer, compute
