"""The accumulator of a 2-D convolution whose channel reduction runs in groups of ``g``
adjacent channels: the shape shared by x86's dot-product instructions.

``vpdpbusd`` (VNNI) adds groups of 4 u8 x s8 products into int32 lanes, ``vdpbf16ps``
(AVX512-BF16) groups of 2 bf16 products into fp32 lanes; their convolutions differ only in
``g`` and the accumulator dtype (``compiler.topi.x86_int8``, ``compiler.topi.x86_bf16``).

Layouts (``L`` output lanes)::

    x    [N, ceil(C/g), H', W', g]              (padded: the caller's padding is in H', W')
    w    [ceil(O/L), ceil(C/g), KH, KW, L, g]   (the g channels of one output adjacent)
    acc  [N, ceil(O/L), OH, OW, L]              OH = (H' - KH) // sh + 1, likewise OW
"""
from __future__ import annotations

from compiler import te


def conv2d_acc(x: te.Tensor, w: te.Tensor, strides=(1, 1), acc_dtype: str = "int32",
               name: str = "conv_acc") -> te.Tensor:
    """``acc_dtype`` ``[N, O/L, OH, OW, L]``: the sum over (c, kh, kw, ci) of
    ``x[n, c, oh*sh + kh, ow*sw + kw, ci] * w[o, c, kh, kw, oi, ci]``, both cast to
    ``acc_dtype`` (layouts in the module docstring); the group width ``g`` is ``x``'s last
    dimension.

    Raises:
        ValueError: ``x`` and ``w`` disagree on ``g`` or on the channel groups.
    """
    N, Cg, Hp, Wp, g = x.shape
    Ob, Cg2, KH, KW, L, g2 = w.shape
    if (g, Cg) != (g2, Cg2):
        raise ValueError(f"conv2d_acc: the input's channel groups {Cg} x {g} must match the "
                         f"weight's {Cg2} x {g2}; pack both for the same instruction")
    sh, sw = strides
    OH, OW = (Hp - KH) // sh + 1, (Wp - KW) // sw + 1
    c, kh, kw, ci = (te.reduce_axis(Cg, "c"), te.reduce_axis(KH, "kh"), te.reduce_axis(KW, "kw"),
                     te.reduce_axis(g, "ci"))
    return te.compute((N, Ob, OH, OW, L), lambda n, o, oh, ow, oi: te.sum(
        te.cast(x[n, c, oh * sh + kh, ow * sw + kw, ci], acc_dtype)
        * te.cast(w[o, c, kh, kw, oi, ci], acc_dtype), axis=(c, kh, kw, ci)), name=name)
