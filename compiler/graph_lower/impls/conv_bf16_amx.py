"""2-D convolutions in bfloat16 on AMX tiles (``tdpbf16ps``), fp32 accumulation.

Chosen over ``conv_bf16`` (AVX512-BF16) for CONV2D nodes marked ``compute_dtype="bfloat16"``
on targets with ``+amx-bf16`` and ``+amx-tile``: NCHW, ``groups == 1``, dilation 1, a
constant weight, and at least :data:`MIN_CHANNELS` input channels (an A tile row holds 32
bf16 channels; fewer than 8 would leave it three quarters padding: the AVX512-BF16 kernel
takes those). The weight is packed at compile time (``conv_bf16_amx:16``:
``[O/16, KH, KW, C/32, 16, 16, 2]`` int16 bf16 bits, rounded to nearest even); the kernel
rounds its input to bf16 once into a channels-last workspace and accumulates 16 x 16 fp32
tiles, one ``tdpbf16ps`` per (tap, 32-channel chunk) (``compiler.topi.x86_amx``). Bias,
residual and activation stay fp32 in the epilogue.
"""
from __future__ import annotations

from compiler.graph import Op
from compiler.topi import x86_amx
from compiler.topi.injective import Lazy

from ..master import MasterKind
from . import conv_bf16
from ..strategy import attr_is, cpu_features, register

#: the fewest input channels a conv takes AMX with (a quarter of an A tile row)
MIN_CHANNELS = 8


def _fits(w):
    """The AVX512-BF16 conv's conditions (``conv_bf16._fits``), and enough input channels."""
    why = conv_bf16._fits(w)
    if why:
        return why
    n = w.node
    if n.src[0].shape[1] < MIN_CHANNELS:
        return f"{n.src[0].shape[1]} input channels, AMX takes {MIN_CHANNELS} or more"
    return None


@register(Op.CONV2D, "conv2d_bf16_amx", kind=MasterKind.CONV2D,
          schedule=lambda s, acc, out, cfg: x86_amx.schedule_conv2d_amx(s, acc, out, "bfloat16"),
          packs=lambda w, cfg: {1: "conv_bf16_amx:16"},
          when=(attr_is("compute_dtype", "bfloat16"), cpu_features("+amx-bf16", "+amx-tile"),
                attr_is("data_layout", "NCHW", "NCHW"),
                attr_is("kernel_layout", "OIHW", "OIHW"), attr_is("groups", 1, 1), _fits),
          plevel=30)
def _conv2d_bf16_amx(b, n, a, cfg):
    strides, pads = n.attr("strides", (1, 1)), n.attr("pads", (0, 0, 0, 0))
    OW = n.shape[3]
    xa = x86_amx.amx_input(b.tensor_of(a[0], "conv_in"), n.src[1].shape[3], strides, pads,
                           -(-OW // 16) * 16, "bfloat16", name=b.fresh("x_amx"))
    b.workspace.append(xa)
    acc = x86_amx.conv2d_amx_acc(xa, a[1]._tensor, strides, "bfloat16",
                                 name=b.fresh("conv_bf16_amx"))
    return Lazy(n.shape, n.dtype, lambda nn, o, h, ww: acc[nn, h, ww // 16, o // 16, ww % 16,
                                                           o % 16]), acc
