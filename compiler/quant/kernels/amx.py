"""Int8 CONV2D on AMX tiles (``tdpbusd``): the CPU int8 path for targets with AMX.

The same integer semantics as the VNNI kernels (``vnni.py``) and the
oracle ``qgraph.eval_node``: the activations take the +128 offset (``tdpbusd`` is u8 x s8,
like ``vpdpbusd``), whose compensation ``128 * sum w`` per output channel is folded into
the bias at compile time, and each accumulator row gets the same requantizing epilogue
(``common._epilogue``). The accumulator is ``compiler.topi.x86_amx``'s implicit-GEMM
conv (any stride and padding; channels padded to 64, output columns and channels to 16).

Which layers take AMX: convs with at least :data:`MIN_CHANNELS` input channels; the others
(a 3-channel stem, whose A tile rows would be 95 % padding) and dense layers (a batch-1
dense layer fills one of a tile's 16 rows) take the VNNI kernels, which every AMX CPU has
(the path requires ``+avx512vnni`` too), as do convs padded with their input's zero point
(attr ``pad_zp``, ``fuse_pad``: the AMX input pads with 0).
"""
from __future__ import annotations

import numpy as np

from compiler import te
from compiler.topi import x86_amx
from compiler.topi.x86_int8 import OFFSET

from ..qgraph import QNode
from .common import _bias, _epilogue, _kernel, requant8
from .vnni import conv2d as vnni_conv2d

#: a conv takes AMX from this many input channels (a quarter of an A tile row's 64)
MIN_CHANNELS = 16


def conv2d(node: QNode, x_shape, weight: np.ndarray, bias: np.ndarray, name="conv2d",
           tensorize: bool = True):
    """Int8 CONV2D of NCHW ``x_shape`` (int8) with OIHW ``weight`` (int8), ``bias`` ((O,)
    int32) -> NCHW int8 on AMX tiles, or on 512-bit VNNI below :data:`MIN_CHANNELS` input
    channels. ``tensorize=False`` builds the same loop nest without the tile instruction
    (the emulation tests run where the CPU has no AMX). Returns a ``KernelDef`` (ABI as
    ``common.py``)."""
    if x_shape[1] < MIN_CHANNELS or node.attrs.get("pad_zp"):    # amx_input pads with 0
        return vnni_conv2d(node, x_shape, weight, bias, lanes=16, name=name)
    a = node.attrs
    N, _, H, W = x_shape
    O, _, KH, KW = weight.shape
    (ph, pw), (sh, sw) = a["padding"], a["strides"]
    OH, OW = (H + 2 * ph - KH) // sh + 1, (W + 2 * pw - KW) // sw + 1
    packed = x86_amx.pack_amx_conv_weight(weight, "int8")
    comp = (OFFSET * weight.reshape(O, -1).astype(np.int64).sum(1)).astype(np.int32)
    x = te.placeholder(x_shape, "int8", "x")
    w = te.placeholder(packed.shape, "int8", "w")
    b = te.placeholder((packed.shape[0] * 16,), "int32", "bias")
    requant, tables = requant8(a, O, node.zp)
    xa = x86_amx.amx_input(x, KW, (sh, sw), (ph, pw, ph, pw), -(-OW // 16) * 16, "int8",
                           name=name + "_xa")
    acc = x86_amx.conv2d_amx_acc(xa, w, (sh, sw), "int8", name=name + "_acc")
    out = te.compute((N, O, OH, OW), lambda n, o, oh, ow: _epilogue(
        acc[n, oh, ow // 16, o // 16, ow % 16, o % 16], b, o, requant), name=name)
    s = te.create_schedule(out)
    x86_amx.schedule_conv2d_amx(s, acc, out, "int8", tensorize)
    consts = [(w, packed), (b, _bias(bias, comp, packed.shape[0] * 16))] + tables
    return _kernel(s, [x], out, "conv", consts, [xa])
