"""Int8 x int8 -> int32 conv2d and dense on x86, tensorized onto VNNI ``vpdpbusd``.

``vpdpbusd`` multiplies unsigned bytes by signed bytes, four at a time, into int32 lanes
(TVM's ``dot_16x1x16_uint8_int8_int32`` in its x86 ``tensor_intrin``; ours is written
afresh over ``compiler.te.tensorize``). Signed int8 activations are made unsigned by the
usual offset: ``xu = x + 128`` (uint8), and ``sum xu * w = sum x * w + 128 * sum w``,
so the compensation ``128 * sum w`` per output channel, computed from the weights at
compile time, is subtracted with the bias (:func:`pack_vnni_weight`). Padding pixels and
padding channels read ``xu = 128`` (x = 0), whose products the compensation removes.

Layouts (``L`` = accumulator lanes: 16 for 512-bit, 8 for 256-bit):

    activations  NCHW int8 -> xu ``[N, ceil(C/4), H + 2ph, W + 2pw, 4]`` uint8 (padded)
    conv weight  OIHW int8 -> ``[ceil(O/L), ceil(C/4), KH, KW, L, 4]`` int8 (VNNI 4-way
                 interleave: the 4 input channels of one output channel are adjacent)
    dense weight (O, C) int8 -> ``[ceil(O/L), ceil(C/4), L, 4]`` int8
    accumulator  ``[N, ceil(O/L), OH, OW, L]`` int32 (dense: ``[M, ceil(O/L), L]``)

The conv accumulator is ``compiler.topi.x86_dot.conv2d_acc`` (groups of 4, int32), shared
with bf16. The requantizing epilogue is the caller's (``compiler/quant/kernels/vnni.py``),
computed per output row right after its accumulator tile (``compute_at``).
"""
from __future__ import annotations

import numpy as np

from compiler import te
from compiler.codegen.llvm import intrin_x86  # noqa: F401  (registers the x86 call names)
from compiler.tir import ir

from .x86_dot import conv2d_acc  # noqa: F401  (int8 callers: conv2d_acc(xu, w, strides, name=))

#: activation offset making int8 unsigned for vpdpbusd (u8 x s8)
OFFSET = 128
#: the longest output row the conv epilogue vectorises whole (MobileNetV2's 56)
ROW_VECTOR_MAX = 64


def vnni_lanes(features: str) -> "int | None":
    """Accumulator lanes of the widest VNNI ``features`` (an LLVM feature string) has: 16
    (AVX512-VNNI), 8 (AVX-VNNI, or AVX512-VNNI + VL at 256 bits), None without VNNI."""
    have = set(features.split(","))
    if "+avx512vnni" in have and "+avx512f" in have:
        return 16
    return 8 if "+avxvnni" in have else None


def vnni_intrin(lanes: int) -> te.TensorIntrin:
    """``c[i] += sum_k a[k] * b[i, k]``, a (4,) uint8, b (lanes, 4) int8, c (lanes,) int32,
    as one ``vpdpbusd`` (body, reset, update)."""
    a = te.placeholder((4,), "uint8", "a")
    b = te.placeholder((lanes, 4), "int8", "b")
    k = te.reduce_axis(4, "k")
    c = te.compute((lanes,), lambda i: te.sum(te.cast(a[k], "int32") * te.cast(b[i, k], "int32"),
                                              axis=k), name="c")
    dtype = f"int32x{lanes}"

    def impl(ins, outs):
        av, bv = ins
        cv = outs[0]
        a4 = ir.load(av.buffer, _run(av, 4), 4)
        b4 = ir.load(bv.buffer, _run(bv, 4 * lanes), 4 * lanes)
        cidx = _run(cv, lanes)
        zero = ir.broadcast(ir.const(0, "int32"), lanes)

        def store(v):
            return ir.Store(cv.buffer, v, cidx)
        dot = (lambda acc: ir.target_call("x86.vpdpbusd", dtype, acc, a4, b4))
        return store(dot(zero)), store(zero), store(dot(ir.load(cv.buffer, cidx, lanes)))
    return te.decl_tensor_intrin(c, impl, f"vpdpbusd_{lanes}x4")


def _run(view: te.BufferView, n: int) -> tuple:
    """The flat index (a ramp) of ``n`` consecutive elements from the view's first."""
    return (ir.ramp(view.elem_offset, 1, n),)


def pack_vnni_weight(weight: np.ndarray, lanes: int) -> "tuple[np.ndarray, np.ndarray]":
    """(packed weight, compensation): OIHW (or (O, C)) int8 -> the VNNI layout above,
    zero-padded; compensation ``OFFSET * sum w`` per output channel, (O,) int32.

    Raises:
        ValueError: weight is not int8 of rank 2 or 4.
    """
    w = np.asarray(weight)
    if w.dtype != np.int8 or w.ndim not in (2, 4):
        raise ValueError(f"VNNI weight must be int8 OIHW or (O, C), not {w.dtype} {w.shape}")
    w4 = w if w.ndim == 4 else w[:, :, None, None]
    O, C, KH, KW = w4.shape
    Op, Cp = -(-O // lanes) * lanes, -(-C // 4) * 4
    full = np.zeros((Op, Cp, KH, KW), np.int8)
    full[:O, :C] = w4
    packed = full.reshape(Op // lanes, lanes, Cp // 4, 4, KH, KW).transpose(0, 2, 4, 5, 1, 3)
    if w.ndim == 2:
        packed = packed[:, :, 0, 0]
    comp = (OFFSET * w4.reshape(O, -1).astype(np.int64).sum(1)).astype(np.int32)
    return np.ascontiguousarray(packed), comp


def offset_input(x: te.Tensor, padding=(0, 0), name="xu", fill: int = 0) -> te.Tensor:
    """NCHW int8 ``x`` -> ``[N, ceil(C/4), H + 2ph, W + 2pw, 4]`` uint8 ``x + 128``, padding
    (pixels and channels) reading ``fill + 128`` (``fill``: the int8 padding value, 0 or an
    input's zero point; padding channels meet zero weights); (N, C) -> ``[N, ceil(C/4),
    4]``."""
    C = x.shape[1]
    one28 = ir.const(OFFSET + fill, "uint8")

    def shifted(v):
        return te.cast(te.cast(v, "int32") + OFFSET, "uint8")
    if len(x.shape) == 2:
        M = x.shape[0]
        return te.compute((M, -(-C // 4), 4), lambda m, c, ci: te.if_then_else(
            c * 4 + ci < C, shifted(x[m, c * 4 + ci]), one28), name=name)
    N, _, H, W = x.shape
    ph, pw = padding

    def f(n, c, h, w, ci):
        conds = [c * 4 + ci < C] if C % 4 else []
        if ph:
            conds += [h >= ph, h < H + ph]
        if pw:
            conds += [w >= pw, w < W + pw]
        v = shifted(x[n, c * 4 + ci, h - ph, w - pw])
        return te.if_then_else(ir.logical_and(*conds), v, one28) if conds else v
    return te.compute((N, -(-C // 4), H + 2 * ph, W + 2 * pw, 4), f, name=name)


def dense_acc(xu: te.Tensor, w: te.Tensor, name="dense_acc") -> te.Tensor:
    """int32 ``[M, O/L, L]``: sum over (c, ci) of xu[m, c, ci] * w[o, c, oi, ci]."""
    M, C4, _ = xu.shape
    Ob, _, L, _ = w.shape
    c, ci = te.reduce_axis(C4, "c"), te.reduce_axis(4, "ci")
    return te.compute((M, Ob, L), lambda m, o, oi: te.sum(
        te.cast(xu[m, c, ci], "int32") * te.cast(w[o, c, oi, ci], "int32"), axis=(c, ci)),
        name=name)


def _ow_tile(OW: int, cap: int = 8) -> int:
    return max(d for d in range(1, min(OW, cap) + 1) if OW % d == 0)


def schedule_conv2d(s: te.Schedule, acc, out, lanes: int) -> None:
    """``out`` NCHW (n, o, oh, ow) reads ``acc``; per (n, o block, oh) the accumulator row
    is computed one ow tile at a time (up to 8 columns x ``lanes``, unrolled, each lane
    vector one vpdpbusd per 4 input channels) in a tile-sized local cache, so that its
    accumulators stay in vector registers for the whole reduction (accumulating into the
    row itself stored every vpdpbusd's result back to the stack: ResNet-18 1.8x slower);
    the row is then requantized one output channel at a time, vectorised along the row (16 columns, or the
    whole row up to ``ROW_VECTOR_MAX`` columns when 16 does not divide it; longer rows
    vectorise across the lanes): the accumulator's lanes are read with a stride
    and each channel's row is stored contiguously (vectorising over the lanes instead
    stores every byte to another channel plane, 1.8x slower on MobileNetV2's 1x1 convs).
    The output-channel blocks run in parallel. The offset input stays at the root (a
    workspace buffer)."""
    n, o, oh, ow = s[out].op.axis
    oo, oi = s[out].split(o, factor=lanes)
    OW = out.shape[3]
    if OW % 16 == 0 and OW > 16:
        owo, owi = s[out].split(ow, factor=16)
        s[out].reorder(n, oo, oh, owo, oi, owi)
        s[out].vectorize(owi)
    elif OW <= ROW_VECTOR_MAX:
        s[out].reorder(n, oo, oh, oi, ow)
        s[out].vectorize(ow)
    else:             # a long row 16 does not divide: vectors across the lanes
        s[out].reorder(n, oo, oh, ow, oi)
        s[out].vectorize(oi)
    s[out].parallel(oo)
    tile = s.cache_write(acc, "local")
    s[acc].compute_at(s[out], oh)
    an, ao, aoh, aow, aoi = s[acc].op.axis
    owo, owi = s[acc].split(aow, factor=_ow_tile(acc.shape[3]))
    s[acc].unroll(owi)
    s[acc].vectorize(aoi)
    s[tile].compute_at(s[acc], owo)
    tn, to, toh, tow, toi = s[tile].op.axis
    c, kh, kw, ci = s[tile].op.reduce_axis
    s[tile].reorder(tn, to, toh, tow, c, kh, kw, toi, ci)
    s[tile].reorder(c, kh, kw, tow, toi, ci)
    s[tile].unroll(tow)
    s[tile].tensorize(toi, vnni_intrin(lanes))


def schedule_dense(s: te.Schedule, acc, out, lanes: int) -> None:
    """``out`` (m, o) reads ``acc``; per row m the accumulator row is computed (one vpdpbusd
    per lane vector and 4 inputs) and requantized."""
    m, o = s[out].op.axis
    s[acc].compute_at(s[out], m)
    am, ao, aoi = s[acc].op.axis
    c, ci = s[acc].op.reduce_axis
    s[acc].reorder(am, ao, c, aoi, ci)
    s[acc].tensorize(aoi, vnni_intrin(lanes))
