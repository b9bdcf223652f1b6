"""Dense layers and convolutions on AMX tiles: int8 (``tdpbusd``) and bfloat16 (``tdpbf16ps``),
16 x 16 output tiles.

An AMX tile holds 16 rows of 64 bytes. One ``tdpbusd`` adds A(16 x 64 u8) . B to a 16 x 16
int32 tile C, B held as 16 rows of (16 columns x 4 consecutive k): the VNNI interleave of
``compiler.topi.x86_int8`` with 16 lanes, so the same packed weight serves both; int8
activations take the same +128 offset and compensation. ``tdpbf16ps`` does the same on
bf16 pairs (A 16 x 32, B 16 rows of 16 columns x 2 k) into fp32.

Shapes: ``x`` (M, K) with M a multiple of 16 and K of 64 (int8) or 32 (bf16); weight
(N, K) with N a multiple of 16. The result is the raw accumulator, (M/16, N/16, 16, 16)
int32 / float32 (the requantizing epilogue is the int8 caller's, as for VNNI).

Convolutions (:func:`conv2d_amx_acc`, any stride and padding) are implicit GEMMs: the
input is copied once into a channels-last, stride-phase-split layout (:func:`amx_input`),
where 16 adjacent output columns' pixels at one window tap are 16 rows ``Cp`` elements
apart, so an A tile is those rows times ``kt`` channels, B the weight's ``kt`` channels at
that tap (:func:`pack_amx_conv_weight`), and each (tap, channel chunk) adds one tile
product with no im2col copy. Output columns are computed in whole tiles (OW rounded up
to 16, the extra columns read padding and are dropped), channels rounded up to ``kt`` and
output channels to 16 with zeros. ``tensorize=False`` keeps the loop nest without the
instruction: the numpy-checkable emulation on CPUs without AMX.

Linux asks a process to request the tile state before its first AMX instruction; the
runtime does (``driver.runtime.amx``).
"""
from __future__ import annotations

import numpy as np

from compiler import te
from compiler.codegen.llvm import intrin_x86  # noqa: F401  (registers the x86 call names)
from compiler.tir import ir

from . import x86_bf16
from .x86_int8 import OFFSET

#: per dtype: (A element, B element, C element, k per tile, k per B row group, instruction)
_KINDS = {"int8": ("uint8", "int8", "int32", 64, 4, "x86.amx.tdpbusd"),
          "bfloat16": ("int16", "int16", "float32", 32, 2, "x86.amx.tdpbf16ps")}


def _check(dtype: str, M: int, K: int, N: int) -> tuple:
    if dtype not in _KINDS:
        raise ValueError(f"AMX dense dtype must be one of {sorted(_KINDS)}, not {dtype!r}")
    kt = _KINDS[dtype][3]
    if M % 16 or N % 16 or K % kt:
        raise ValueError(f"AMX dense needs M and N multiples of 16 and K of {kt}, not "
                         f"M={M}, K={K}, N={N}; pad the operands or use the VNNI path")
    return _KINDS[dtype]


def amx_intrin(dtype: str) -> te.TensorIntrin:
    """One 16 x 16 tile ``c += a . b`` (a (16, kt), b (kt/g, 16, g), c (16, 16)) as one
    AMX instruction; (body, reset, update). For bf16 the operands are bit patterns: the
    declared compute only fixes shapes (the instruction is the semantics)."""
    ae, be, ce, kt, g, call = _KINDS[dtype]
    a = te.placeholder((16, kt), ae, "a")
    b = te.placeholder((kt // g, 16, g), be, "b")
    ko, ki = te.reduce_axis(kt // g, "ko"), te.reduce_axis(g, "ki")
    c = te.compute((16, 16), lambda i, j: te.sum(
        te.cast(a[i, ko * g + ki], ce) * te.cast(b[ko, j, ki], ce), axis=(ko, ki)), name="c")

    def impl(ins, outs):
        av, bv = ins
        cv = outs[0]
        lda = ir.const(av.buffer.strides[-2] * (1 if ae == "uint8" else 2), "int32")
        tile = ir.Evaluate(ir.target_call(call, "int32", cv.access_ptr(), av.access_ptr(),
                                          bv.access_ptr(), lda))
        row = cv.buffer.strides[-2]
        zero = ir.broadcast(ir.const(0, ce), 16)
        reset = ir.seq(*(ir.Store(cv.buffer, zero, (ir.ramp(cv.elem_offset + r * row, 1, 16),))
                         for r in range(16)))
        return ir.seq(reset, tile), reset, tile
    return te.decl_tensor_intrin(c, impl, f"amx_{dtype}_16x16")


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def amx_input(x: te.Tensor, KW: int, strides, pads, OW16: int, dtype: str,
              name: str = "x_amx") -> te.Tensor:
    """NCHW ``x`` (int8, or float32 for bf16) -> the A operand of :func:`conv2d_amx_acc`,
    ``[N, H + pt + pb, sw, Wq, Cp]`` (uint8 ``x + 128`` for int8, int16 bf16 bits): padded
    column ``w`` at ``[.., w % sw, w // sw, :]`` so that output column ``ow`` at tap ``kw``
    reads ``[.., kw % sw, ow + kw // sw, :]`` (16 adjacent output columns are 16 rows
    ``Cp`` elements apart, for any stride); ``Cp`` the channels rounded up to ``kt``,
    ``Wq = OW16 + (KW - 1) // sw`` (``OW16``: the output columns rounded up to 16). Padding
    pixels, columns past the right pad and channels past C read x = 0."""
    N, C, H, W = x.shape
    pt, pl, pb, _ = pads
    sw = strides[1]
    kt = _KINDS[dtype][3]
    Cp, Wq = _ceil(C, kt) * kt, OW16 + (KW - 1) // sw
    if dtype == "int8":
        zero = ir.const(OFFSET, "uint8")

        def value(v):
            return te.cast(te.cast(v, "int32") + OFFSET, "uint8")
    else:
        zero = ir.const(0, "int16")

        def value(v):
            return ir.target_call("x86.bf16_bits", "int16", v)

    def f(n, h, r, q, c):
        w = q * sw + r
        conds = [c < C] if Cp != C else []
        conds += [h >= pt] if pt else []
        conds += [h < H + pt] if pb else []
        conds += [w >= pl] if pl else []
        conds += [w < W + pl] if Wq * sw > W + pl else []
        v = value(x[n, c, h - pt, w - pl])
        return te.if_then_else(ir.logical_and(*conds), v, zero) if conds else v
    return te.compute((N, H + pt + pb, sw, Wq, Cp), f, name=name)


def pack_amx_conv_weight(w: np.ndarray, dtype: str) -> np.ndarray:
    """OIHW ``w`` (int8; float32 for bf16, rounded to bf16 bits) -> the B operand of
    :func:`conv2d_amx_acc`, ``[ceil(O/16), KH, KW, Cp/kt, kt/g, 16, g]`` (one 16-row B tile,
    1 KiB, per output-channel tile, tap and channel chunk), zero-padded."""
    _, be, _, kt, g, _ = _KINDS[dtype]
    O, C, KH, KW = w.shape
    Op, Cp = _ceil(O, 16) * 16, _ceil(C, kt) * kt
    full = np.zeros((Op, Cp, KH, KW), np.float32 if dtype == "bfloat16" else np.int8)
    full[:O, :C] = w
    if dtype == "bfloat16":
        full = x86_bf16.to_bf16_bits(full)
    tiles = full.reshape(Op // 16, 16, Cp // kt, kt // g, g, KH, KW).transpose(0, 5, 6, 2, 3, 1, 4)
    return np.ascontiguousarray(tiles).astype(be)


def conv2d_amx_acc(xa: te.Tensor, w: te.Tensor, strides, dtype: str,
                   name: str = "amx_conv") -> te.Tensor:
    """The raw accumulator ``[N, OH, OW16/16, ceil(O/16), 16, 16]`` (int32 / float32: output
    row, column tile, channel tile, then 16 columns x 16 channels, one C tile) of the conv of
    :func:`amx_input` ``xa`` with :func:`pack_amx_conv_weight` ``w``: for int8 it holds
    ``sum (x + 128) * w``, the caller subtracts ``128 * sum w`` per output channel."""
    ae, be, ce, kt, g, _ = _KINDS[dtype]
    N, Hp, sw, Wq, Cp = xa.shape
    Ob, KH, KW, CC, KO, _, _ = w.shape
    sh = strides[0]
    OH, OW16 = (Hp - KH) // sh + 1, Wq - (KW - 1) // sw
    kh, kw = te.reduce_axis(KH, "kh"), te.reduce_axis(KW, "kw")
    cc, ko, ki = te.reduce_axis(CC, "cc"), te.reduce_axis(KO, "ko"), te.reduce_axis(g, "ki")
    val = _value(dtype)
    return te.compute((N, OH, OW16 // 16, Ob, 16, 16), lambda n, oh, wo, oo, mi, ni: te.sum(
        val(xa[n, oh * sh + kh, kw % sw, wo * 16 + mi + kw // sw, cc * kt + ko * g + ki])
        * val(w[oo, kh, kw, cc, ko, ni, ki]), axis=(kh, kw, cc, ko, ki)), name=name)


def _value(dtype: str):
    """An operand's value in the accumulator's type: int8 / uint8 widened to int32, bf16 bits
    read as the float32 they stand for (what the loop nest computes untensorized)."""
    if dtype == "int8":
        return lambda v: te.cast(v, "int32")
    return lambda v: ir.target_call("x86.bf16_value", "float32", v)


def schedule_conv2d_amx(s: te.Schedule, acc, out, dtype: str, tensorize: bool = True) -> None:
    """``out`` NCHW (n, o, oh, ow) reads ``acc``; per (n, oh), in parallel over oh, the
    accumulator row is computed, each (column tile, channel tile) one tile product per
    (tap, channel chunk), then the epilogue runs over 16-channel vectors. ``tensorize=False``
    keeps the same loop nest in plain code: the emulation the tests run on CPUs without
    AMX."""
    n, o, oh, ow = s[out].op.axis
    oo, oi = s[out].split(o, factor=16)
    s[out].reorder(n, oh, oo, ow, oi)
    s[out].vectorize(oi)
    s[out].parallel(oh)
    s[acc].compute_at(s[out], oh)
    an, aoh, wo, ao, mi, ni = s[acc].op.axis
    kh, kw, cc, ko, ki = s[acc].op.reduce_axis
    s[acc].reorder(an, aoh, wo, ao, kh, kw, cc, mi, ni, ko, ki)
    if tensorize:
        s[acc].tensorize(mi, amx_intrin(dtype))


def conv2d_amx(x_shape, w_shape, strides=(1, 1), pads=(0, 0, 0, 0), dtype: str = "int8",
               tensorize: bool = True):
    """A standalone AMX conv: ``(schedule, [x, w, xa, out])``, ``x`` NCHW ``x_shape`` (int8 /
    float32), ``w`` the :func:`pack_amx_conv_weight` of an OIHW ``w_shape``, ``xa`` the
    A operand (a workspace), ``out`` NCHW the raw accumulator (int32 with the +128 offset's
    ``128 * sum w`` still in / float32); ``pads`` (top, left, bottom, right).

    Raises:
        ValueError: an unknown dtype, or input channels that differ from the weight's.
    """
    if dtype not in _KINDS:
        raise ValueError(f"AMX conv dtype must be one of {sorted(_KINDS)}, not {dtype!r}")
    N, C, H, W = x_shape
    O, C2, KH, KW = w_shape
    if C2 != C:
        raise ValueError(f"AMX conv: activation channels {C} != weight in-channels {C2}")
    (sh, sw), (pt, pl, pb, pr) = strides, pads
    OH, OW = (H + pt + pb - KH) // sh + 1, (W + pl + pr - KW) // sw + 1
    ae, be, ce, kt, g, _ = _KINDS[dtype]
    x = te.placeholder(tuple(x_shape), "int8" if dtype == "int8" else "float32", "x")
    w = te.placeholder((_ceil(O, 16), KH, KW, _ceil(C, kt), kt // g, 16, g), be, "w")
    xa = amx_input(x, KW, strides, pads, _ceil(OW, 16) * 16, dtype)
    acc = conv2d_amx_acc(xa, w, strides, dtype)
    out = te.compute((N, O, OH, OW), lambda n, o, h, ww: acc[n, h, ww // 16, o // 16, ww % 16,
                                                             o % 16], name="amx_conv_out")
    s = te.create_schedule(out)
    schedule_conv2d_amx(s, acc, out, dtype, tensorize)
    return s, [x, w, xa, out]


def dense_amx(M: int, K: int, N: int, dtype: str = "int8"):
    """The AMX dense accumulator: ``(schedule, [a, w, acc])`` with ``a`` (M, K) (uint8 for
    int8: the offset activations; int16 bf16 bits), ``w`` (N/16, K/kt, kt/g, 16, g) and
    ``acc`` (M/16, N/16, 16, 16).

    Raises:
        ValueError: an unknown dtype or shapes that are not whole tiles.
    """
    ae, be, ce, kt, g, _ = _check(dtype, M, K, N)
    a = te.placeholder((M, K), ae, "a")
    w = te.placeholder((N // 16, K // kt, kt // g, 16, g), be, "w")
    kk, ko, ki = te.reduce_axis(K // kt, "kk"), te.reduce_axis(kt // g, "ko"), te.reduce_axis(g, "ki")
    acc = te.compute((M // 16, N // 16, 16, 16), lambda mo, no, mi, ni: te.sum(
        te.cast(a[mo * 16 + mi, kk * kt + ko * g + ki], ce) * te.cast(w[no, kk, ko, ni, ki], ce),
        axis=(kk, ko, ki)), name="amx_acc")
    s = te.create_schedule(acc)
    mo, no, mi, ni = s[acc].op.axis
    s[acc].reorder(mo, no, kk, mi, ni, ko, ki)
    s[acc].tensorize(mi, amx_intrin(dtype))
    return s, [a, w, acc]
