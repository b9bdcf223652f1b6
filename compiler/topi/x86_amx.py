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

Convolutions (:func:`conv2d_amx`, stride 1) are implicit GEMMs over NHWC activations: an
A tile is 16 adjacent output columns' input pixels (row stride C) times ``kt`` channels at
one window tap, B the weight's ``kt`` channels at that tap, so each (tap, channel chunk)
adds one tile product with no im2col copy.

Linux asks a process to request the tile state before its first AMX instruction; the
runtime does (``driver.runtime.amx``).
"""
from __future__ import annotations

from compiler import te
from compiler.codegen.llvm import intrin_x86  # noqa: F401  (registers the x86 call names)
from compiler.tir import ir

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


def conv2d_amx(x_shape, w_shape, dtype: str = "bfloat16"):
    """The AMX convolution accumulator, stride 1: ``(schedule, [a, w, acc])`` with ``a``
    the padded NHWC activations ``x_shape`` = (N, Hp, Wp, C) (uint8 offset int8 / int16
    bf16 bits), ``w`` the OIHW ``w_shape`` packed as (O/16, KH, KW, C/kt, kt/g, 16, g) and
    ``acc`` (N, OH, OW/16, O/16, 16, 16): output rows, column tiles, channel tiles.

    Raises:
        ValueError: an unknown dtype, C not a multiple of ``kt``, O or OW not of 16.
    """
    N, Hp, Wp, C = x_shape
    O, C2, KH, KW = w_shape
    OH, OW = Hp - KH + 1, Wp - KW + 1
    if C2 != C:
        raise ValueError(f"AMX conv: activation channels {C} != weight in-channels {C2}")
    if dtype in _KINDS and (OW % 16 or O % 16 or C % _KINDS[dtype][3]):
        raise ValueError(f"AMX conv needs OW and O multiples of 16 and C of {_KINDS[dtype][3]}, "
                         f"not OW={OW}, O={O}, C={C}; pad the operands or use the VNNI path")
    ae, be, ce, kt, g, _ = _check(dtype, OW, C, O)
    a = te.placeholder((N, Hp, Wp, C), ae, "a")
    w = te.placeholder((O // 16, KH, KW, C // kt, kt // g, 16, g), be, "w")
    kh, kw = te.reduce_axis(KH, "kh"), te.reduce_axis(KW, "kw")
    cc, ko, ki = te.reduce_axis(C // kt, "cc"), te.reduce_axis(kt // g, "ko"), te.reduce_axis(g, "ki")
    acc = te.compute((N, OH, OW // 16, O // 16, 16, 16), lambda n, oh, wo, oo, mi, ni: te.sum(
        te.cast(a[n, oh + kh, wo * 16 + mi + kw, cc * kt + ko * g + ki], ce)
        * te.cast(w[oo, kh, kw, cc, ko, ni, ki], ce), axis=(kh, kw, cc, ko, ki)), name="amx_conv")
    s = te.create_schedule(acc)
    n, oh, wo, oo, mi, ni = s[acc].op.axis
    s[acc].reorder(n, oh, wo, oo, kh, kw, cc, mi, ni, ko, ki)
    s[acc].tensorize(mi, amx_intrin(dtype))
    return s, [a, w, acc]


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
