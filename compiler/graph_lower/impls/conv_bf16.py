"""2-D convolutions in bfloat16 on AVX512-BF16 (``vdpbf16ps``), fp32 accumulation.

Chosen for CONV2D nodes marked ``compute_dtype="bfloat16"`` (``compiler.graph_lower.bf16``)
on targets with ``+avx512bf16``: NCHW, ``groups == 1`` (depthwise and grouped convs keep
the fp32 kernels: they are not dot products over channels), dilation 1, a constant
weight. The weight is packed at compile time to bf16 bit patterns (``conv_bf16:16``:
``[O/16, C/2, KH, KW, 16, 2]`` int16, rounded to nearest even); the kernel rounds its
input to bf16 once into a padded workspace (``[N, C/2, H', W', 2]``) and accumulates,
per 16 output channels, one ``vdpbf16ps`` per pair of input channels and window tap
(``compiler.topi.x86_bf16``). Bias, residual and activation stay fp32 in the epilogue.
"""
from __future__ import annotations

from compiler.graph import Op
from compiler.topi import x86_bf16, x86_dot
from compiler.topi.injective import Lazy

from ..master import MasterKind
from ..space import ConfigSpace, Knob
from ..strategy import attr_is, cpu_features, register

L = x86_bf16.LANES
_OW_TILE = Knob("ow_tile", (4, 7, 8, 14, 16), 8)


def _fits(w):
    n = w.node
    if not w.is_const(n.src[1]):
        return "the weight is not a constant input"
    if tuple(n.attr("dilations", (1, 1))) != (1, 1):
        return f"dilations are {n.attr('dilations')}, needs (1, 1)"
    return None


@register(Op.CONV2D, "conv2d_bf16", kind=MasterKind.CONV2D,
          space=lambda w: ConfigSpace((_OW_TILE,)),
          schedule=lambda s, acc, out, cfg: x86_bf16.schedule_conv2d_bf16(s, acc, out,
                                                                          cfg["ow_tile"]),
          packs=lambda w, cfg: {1: f"conv_bf16:{L}"},
          when=(attr_is("compute_dtype", "bfloat16"), cpu_features("+avx512bf16"),
                attr_is("data_layout", "NCHW", "NCHW"),
                attr_is("kernel_layout", "OIHW", "OIHW"), attr_is("groups", 1, 1), _fits),
          plevel=20)
def _conv2d_bf16(b, n, a, cfg):
    xb = x86_bf16.bf16_input(b.tensor_of(a[0], "conv_in"), n.attr("pads", (0, 0, 0, 0)),
                             name=b.fresh("x_bf16"))
    b.workspace.append(xb)
    acc = x86_dot.conv2d_acc(xb, a[1]._tensor, n.attr("strides", (1, 1)), "float32",
                             name=b.fresh("conv_bf16"))
    return Lazy(n.shape, n.dtype, lambda nn, o, h, ww: acc[nn, o // L, h, ww, o % L]), acc
