"""bfloat16 dense on AVX512-BF16 ``vdpbf16ps``: bf16 weights and activations, fp32 accumulation.

``vdpbf16ps`` adds, to each of 16 fp32 lanes, the two products of a bf16 pair
(``acc[i] += a[0] b[2i] + a[1] b[2i+1]``). bf16 values are held as their 16-bit
patterns (int16: the loop IR has no bf16 type): weights rounded at compile time
(:func:`to_bf16_bits`, ties to even), activations in the kernel (``x86.bf16_bits``).

Layouts: ``x`` (M, K) float32 -> bits ``[M, K/2, 2]``; weight (N, K) -> ``[N/16, K/2, 16, 2]``
(pairs of k adjacent per output column, zero-padded); accumulator ``[M, N/16, 16]`` fp32.
:func:`bf16_reference` is the numpy emulation the tests compare with.
"""
from __future__ import annotations

import numpy as np

from compiler import te
from compiler.codegen.llvm import intrin_x86  # noqa: F401  (registers the x86 call names)
from compiler.tir import ir

LANES = 16


def to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> the nearest bfloat16 (ties to even) as int16 bit patterns (same shape)."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16).view(np.int16)


def from_bf16_bits(b: np.ndarray) -> np.ndarray:
    """int16 bfloat16 bit patterns -> float32."""
    return (np.asarray(b).view(np.uint16).astype(np.uint32) << 16).view(np.float32)


def bf16_reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """numpy emulation: ``x`` (M, K) @ ``w`` (N, K).T with both rounded to bf16, products and
    sums in float32."""
    xb = from_bf16_bits(to_bf16_bits(x))
    wb = from_bf16_bits(to_bf16_bits(w))
    return (xb @ wb.T).astype(np.float32)


def pack_bf16_weight(w: np.ndarray) -> np.ndarray:
    """(N, K) float32 -> ``[ceil(N/16), ceil(K/2), 16, 2]`` int16 bf16 bits, zero-padded."""
    N, K = w.shape
    Np, Kp = -(-N // LANES) * LANES, -(-K // 2) * 2
    full = np.zeros((Np, Kp), np.float32)
    full[:N, :K] = w
    return np.ascontiguousarray(to_bf16_bits(full).reshape(Np // LANES, LANES, Kp // 2, 2)
                                .transpose(0, 2, 1, 3))


def dpbf16_intrin() -> te.TensorIntrin:
    """``c[i] += a[0] b[i, 0] + a[1] b[i, 1]``: a (2,), b (16, 2) bf16 bits, c (16,) fp32, as
    one ``vdpbf16ps`` (the declared compute fixes shapes only: operands are bit patterns)."""
    a = te.placeholder((2,), "int16", "a")
    b = te.placeholder((LANES, 2), "int16", "b")
    k = te.reduce_axis(2, "k")
    c = te.compute((LANES,), lambda i: te.sum(te.cast(a[k], "float32") * te.cast(b[i, k], "float32"),
                                              axis=k), name="c")

    def impl(ins, outs):
        av, bv = ins
        cv = outs[0]
        a2 = ir.load(av.buffer, (ir.ramp(av.elem_offset, 1, 2),), 2)
        b32 = ir.load(bv.buffer, (ir.ramp(bv.elem_offset, 1, 2 * LANES),), 2 * LANES)
        cidx = (ir.ramp(cv.elem_offset, 1, LANES),)
        zero = ir.broadcast(ir.const(0.0, "float32"), LANES)

        def store(v):
            return ir.Store(cv.buffer, v, cidx)
        dot = (lambda acc: ir.target_call("x86.vdpbf16ps", f"float32x{LANES}", acc, a2, b32))
        return store(dot(zero)), store(zero), store(dot(ir.load(cv.buffer, cidx, LANES)))
    return te.decl_tensor_intrin(c, impl, "vdpbf16ps_16x2")


def dense_bf16(M: int, K: int, N: int):
    """``(schedule, [x, w, bias, out])``: ``out`` (M, N) float32 = bf16(x) @ bf16(w).T + bias,
    ``x`` (M, K) float32, ``w`` packed (:func:`pack_bf16_weight`), ``bias`` (N,) float32.
    The activations' bits are a workspace computed at the root."""
    Kp, Nb = -(-K // 2), -(-N // LANES)
    x = te.placeholder((M, K), "float32", "x")
    w = te.placeholder((Nb, Kp, LANES, 2), "int16", "w")
    bias = te.placeholder((N,), "float32", "bias")
    xb = te.compute((M, Kp, 2), lambda m, c, i: te.if_then_else(
        c * 2 + i < K, ir.target_call("x86.bf16_bits", "int16", x[m, c * 2 + i]),
        ir.const(0, "int16")) if K % 2 else ir.target_call("x86.bf16_bits", "int16", x[m, c * 2 + i]),
        name="x_bf16")
    c, ci = te.reduce_axis(Kp, "c"), te.reduce_axis(2, "ci")
    acc = te.compute((M, Nb, LANES), lambda m, o, oi: te.sum(
        te.cast(xb[m, c, ci], "float32") * te.cast(w[o, c, oi, ci], "float32"), axis=(c, ci)),
        name="bf16_acc")
    out = te.compute((M, N), lambda m, n: acc[m, n // LANES, n % LANES] + bias[n], name="dense_bf16")
    s = te.create_schedule(out)
    mm, _ = s[out].op.axis
    s[acc].compute_at(s[out], mm)
    am, ao, aoi = s[acc].op.axis
    s[acc].reorder(am, ao, c, aoi, ci)
    s[acc].tensorize(aoi, dpbf16_intrin())
    return s, [x, w, bias, xb, out]
