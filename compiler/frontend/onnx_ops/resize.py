"""Resize (opsets 11+): nearest and linear modes, scales or sizes inputs, optional axes (18+)."""

from __future__ import annotations

import math

import numpy as np

from ...graph.ops import Op


def resize(ctx, node, a):
    x = ctx.required(node, 0)
    rank = len(x.shape)
    mode = a.get("mode", "nearest")
    if mode not in ("nearest", "linear"):
        raise ctx.fail(node, f"mode {mode!r} is not supported; use 'nearest' or 'linear'")
    ctm = a.get("coordinate_transformation_mode", "half_pixel")
    if ctm == "tf_crop_and_resize":
        raise ctx.fail(node, "coordinate_transformation_mode 'tf_crop_and_resize' is not supported")
    if a.get("antialias", 0):
        raise ctx.fail(node, "antialias=1 is not supported")
    if a.get("keep_aspect_ratio_policy", "stretch") != "stretch":
        raise ctx.fail(node, f"keep_aspect_ratio_policy {a['keep_aspect_ratio_policy']!r} is not supported")
    axes = [int(v) % rank for v in a.get("axes", range(rank))]
    scales = ctx.const(node, 2, "scales")
    sizes = ctx.const(node, 3, "sizes")
    full_scales, full_sizes = [1.0] * rank, list(x.shape)
    if sizes is not None and sizes.size:
        for ax, n in zip(axes, sizes.reshape(-1).tolist()):
            full_sizes[ax], full_scales[ax] = int(n), int(n) / x.shape[ax]
    elif scales is not None and scales.size:
        for ax, s in zip(axes, scales.reshape(-1).tolist()):
            full_scales[ax] = float(np.float32(s))
            full_sizes[ax] = int(math.floor(x.shape[ax] * full_scales[ax]))
    else:
        raise ctx.fail(node, "needs a non-empty constant scales or sizes input")
    return ctx.make(node, Op.RESIZE, x, mode=mode, coordinate_transformation_mode=ctm,
                    nearest_mode=a.get("nearest_mode", "round_prefer_floor"),
                    scales=tuple(full_scales), sizes=tuple(full_sizes))


CONVERTERS = {"Resize": resize}
