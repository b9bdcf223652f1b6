"""QuantizeLinear / DequantizeLinear (per-tensor and per-axis; blocked quantization is not supported)."""

from __future__ import annotations

import numpy as np
from onnx import helper

from ...graph.ops import Op


def _common(ctx, node, a, x):
    if int(a.get("block_size", 0)):
        raise ctx.fail(node, f"block_size={a['block_size']} (blocked quantization) is not supported")
    axis = int(a.get("axis", 1))
    return axis % len(x.shape) if x.shape else 0


def quantize_linear(ctx, node, a):
    x, scale = ctx.required(node, 0), ctx.required(node, 1)
    zp = ctx.input(node, 2)
    if zp is None:
        to = np.dtype(helper.tensor_dtype_to_np_dtype(a["output_dtype"])) if a.get("output_dtype") else np.dtype(np.uint8)
        zp = ctx.param(np.zeros((), to), f"{node.name}_zero_point")
    if zp.dtype not in ("uint8", "int8", "uint16", "int16", "int32"):
        raise ctx.fail(node, f"zero point dtype {zp.dtype} is not supported; use uint8/int8/uint16/int16")
    return ctx.make(node, Op.QUANTIZE, x, scale, zp, axis=_common(ctx, node, a, x), to=zp.dtype)


def dequantize_linear(ctx, node, a):
    x, scale = ctx.required(node, 0), ctx.required(node, 1)
    zp = ctx.input(node, 2)
    if zp is None:
        zp = ctx.param(np.zeros((), x.dtype), f"{node.name}_zero_point")
    return ctx.make(node, Op.DEQUANTIZE, x, scale, zp, axis=_common(ctx, node, a, x))


CONVERTERS = {"QuantizeLinear": quantize_linear, "DequantizeLinear": dequantize_linear}
