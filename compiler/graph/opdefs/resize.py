"""RESIZE (ONNX Resize, modes nearest and linear), injective.

Attributes: sizes (output shape), scales (one float per axis; output/input
when ONNX gave sizes), mode "nearest" | "linear",
coordinate_transformation_mode "half_pixel" | "pytorch_half_pixel" |
"align_corners" | "asymmetric" | "half_pixel_symmetric", nearest_mode
"round_prefer_floor" | "round_prefer_ceil" | "floor" | "ceil".
Linear mode is separable: one 1-D interpolation per resized axis
(bilinear on H, W for NCHW), as the ONNX reference implementation.
"""

from __future__ import annotations

import numpy as np

from ..errors import GraphError
from ..ops import Kind, Op
from ..registry import register

MODES = ("nearest", "linear")
COORD_MODES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "half_pixel_symmetric")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def source_coords(out_len: int, in_len: int, scale: float, mode: str) -> np.ndarray:
    """Input coordinate (float64) of every output index along one axis."""
    x = np.arange(out_len, dtype=np.float64)
    if mode == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if out_len > 1 else np.zeros_like(x)
    if mode == "align_corners":
        return x * (in_len - 1) / (out_len - 1) if out_len > 1 else np.zeros_like(x)
    if mode == "asymmetric":
        return x / scale
    adjustment = out_len / (scale * in_len)  # half_pixel_symmetric
    center = in_len / 2
    return center * (1 - adjustment) + (x + 0.5) / scale - 0.5


def _nearest(c: np.ndarray, mode: str) -> np.ndarray:
    if mode == "floor":
        return np.floor(c)
    if mode == "ceil":
        return np.ceil(c)
    frac = c - np.floor(c)
    half = np.isclose(frac, 0.5)
    return np.where(half, np.floor(c) if mode == "round_prefer_floor" else np.ceil(c), np.round(c))


@register(Op.RESIZE, Kind.INJECTIVE, 1)
def _resize():
    def infer(src, a):
        sizes = tuple(a["sizes"])
        if len(sizes) != len(src[0].shape) or len(a["scales"]) != len(sizes) or min(sizes) <= 0:
            raise GraphError(f"sizes {list(sizes)} / scales {list(a['scales'])} need one positive entry per axis "
                             f"of {list(src[0].shape)}")
        for key, allowed in (("mode", MODES), ("coordinate_transformation_mode", COORD_MODES),
                             ("nearest_mode", NEAREST_MODES)):
            if a[key] not in allowed:
                raise GraphError(f"{key} must be one of {', '.join(allowed)}, not {a[key]!r}")
        return sizes, src[0].dtype

    def compute(args, a):
        y = args[0]
        for ax, (n_in, n_out, scale) in enumerate(zip(y.shape, a["sizes"], a["scales"])):
            if n_in == n_out and scale == 1.0:
                continue
            c = source_coords(n_out, n_in, scale, a["coordinate_transformation_mode"])
            if a["mode"] == "nearest":
                idx = np.clip(_nearest(c, a["nearest_mode"]), 0, n_in - 1).astype(np.int64)
                y = np.take(y, idx, axis=ax)
                continue
            c = np.clip(c, 0, n_in - 1)
            i0 = np.floor(c).astype(np.int64)
            i1 = np.minimum(i0 + 1, n_in - 1)
            shape = [1] * y.ndim
            shape[ax] = n_out
            w = (c - i0).reshape(shape)
            y = (np.take(y, i0, axis=ax) * (1 - w) + np.take(y, i1, axis=ax) * w).astype(args[0].dtype)
        return np.ascontiguousarray(y)
    return infer, compute
