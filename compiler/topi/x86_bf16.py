"""bfloat16 dense and conv2d on AVX512-BF16 ``vdpbf16ps``: bf16 weights and activations, fp32
accumulation.

``vdpbf16ps`` adds, to each of 16 fp32 lanes, the two products of a bf16 pair
(``acc[i] += a[0] b[2i] + a[1] b[2i+1]``). bf16 values are held as their 16-bit
patterns (int16: the loop IR has no bf16 type): weights rounded at compile time
(:func:`to_bf16_bits`, ties to even), activations in the kernel (``x86.bf16_bits``).

Layouts (pairs of reduction elements adjacent, zero-padded; ``ceil`` implied)::

    dense   x (M, K) float32 -> bits [M, K/2, 2]; weight (N, K) -> [N/16, K/2, 16, 2];
            accumulator [M, N/16, 16] fp32
    conv2d  x NCHW float32 -> bits [N, C/2, H + pt + pb, W + pl + pr, 2] (padding pixels
            and the odd channel read 0); weight OIHW -> [O/16, C/2, KH, KW, 16, 2];
            accumulator [N, O/16, OH, OW, 16] fp32 (``compiler.topi.x86_dot.conv2d_acc``,
            groups of 2, shared with int8 VNNI's groups of 4)

:func:`bf16_reference` and :func:`bf16_conv_reference` are the numpy emulations the tests
compare with.
"""
from __future__ import annotations

import numpy as np

from compiler import te
from compiler.codegen.llvm import intrin_x86  # noqa: F401  (registers the x86 call names)
from compiler.tir import ir

from . import x86_dot

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


def bf16_conv_reference(x: np.ndarray, w: np.ndarray, strides=(1, 1),
                        pads=(0, 0, 0, 0)) -> np.ndarray:
    """numpy emulation of the bf16 conv2d: NCHW ``x``, OIHW ``w`` rounded to bf16, products
    and sums in float64 (the kernel's fp32 sums differ from it by fp32 rounding only);
    ``pads`` (top, left, bottom, right). Returns (N, O, OH, OW) float32."""
    xb = from_bf16_bits(to_bf16_bits(x)).astype(np.float64)
    wb = from_bf16_bits(to_bf16_bits(w)).astype(np.float64)
    pt, pl, pb, pr = pads
    xp = np.pad(xb, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    O, _, KH, KW = w.shape
    sh, sw = strides
    OH, OW = (xp.shape[2] - KH) // sh + 1, (xp.shape[3] - KW) // sw + 1
    out = np.zeros((x.shape[0], O, OH, OW))
    for kh in range(KH):
        for kw in range(KW):
            win = xp[:, :, kh:kh + sh * (OH - 1) + 1:sh, kw:kw + sw * (OW - 1) + 1:sw]
            out += np.einsum("nchw,oc->nohw", win, wb[:, :, kh, kw])
    return out.astype(np.float32)


def pack_bf16_conv_weight(w: np.ndarray) -> np.ndarray:
    """OIHW float32 -> ``[ceil(O/16), ceil(C/2), KH, KW, 16, 2]`` int16 bf16 bits, zero-padded."""
    O, C, KH, KW = w.shape
    Op, Cp = -(-O // LANES) * LANES, -(-C // 2) * 2
    full = np.zeros((Op, Cp, KH, KW), np.float32)
    full[:O, :C] = w
    return np.ascontiguousarray(to_bf16_bits(full).reshape(Op // LANES, LANES, Cp // 2, 2, KH, KW)
                                .transpose(0, 2, 4, 5, 1, 3))


def bf16_input(x: te.Tensor, pads=(0, 0, 0, 0), name="x_bf16") -> te.Tensor:
    """NCHW float32 ``x`` -> its bf16 bits ``[N, ceil(C/2), H + pt + pb, W + pl + pr, 2]``
    int16, padding (pixels, the odd channel) reading 0."""
    N, C, H, W = x.shape
    pt, pl, pb, pr = pads
    zero = ir.const(0, "int16")

    def f(n, c, h, w, ci):
        conds = [c * 2 + ci < C] if C % 2 else []
        if pt:
            conds.append(h >= pt)
        if pb:
            conds.append(h < H + pt)
        if pl:
            conds.append(w >= pl)
        if pr:
            conds.append(w < W + pl)
        v = ir.target_call("x86.bf16_bits", "int16", x[n, c * 2 + ci, h - pt, w - pl])
        return te.if_then_else(ir.logical_and(*conds), v, zero) if conds else v
    return te.compute((N, -(-C // 2), H + pt + pb, W + pl + pr, 2), f, name=name)


def _ow_tile(OW: int, cap: int) -> int:
    return max(d for d in range(1, min(OW, cap) + 1) if OW % d == 0)


def schedule_conv2d_bf16(s: te.Schedule, acc, out, ow_tile: int = 8) -> None:
    """``out`` NCHW (n, o, oh, ow) reads ``acc``; per (n, o block, oh) the accumulator row
    is computed (``ow_tile`` columns unrolled, a divisor of OW at most that; each one
    ``vdpbf16ps`` per pair of input channels) and the epilogue applied; the output-channel
    blocks run in parallel. The bf16 input stays at the root (a workspace)."""
    n, o, oh, ow = s[out].op.axis
    oo, oi = s[out].split(o, factor=LANES)
    s[out].reorder(n, oo, oh, ow, oi)
    s[out].vectorize(oi)
    s[out].parallel(oo)
    s[acc].compute_at(s[out], oh)
    an, ao, aoh, aow, aoi = s[acc].op.axis
    c, kh, kw, ci = s[acc].op.reduce_axis
    owo, owi = s[acc].split(aow, factor=_ow_tile(acc.shape[3], ow_tile))
    s[acc].reorder(an, ao, aoh, owo, c, kh, kw, owi, aoi, ci)
    s[acc].unroll(owi)
    s[acc].tensorize(aoi, dpbf16_intrin())


def conv2d_bf16(x_shape, w_shape, strides=(1, 1), pads=(0, 0, 0, 0)):
    """``(schedule, [x, w, bias, xb, out])``: ``out`` NCHW float32 = bf16 conv of ``x``
    (``x_shape`` NCHW float32) with the packed weight (:func:`pack_bf16_conv_weight` of an
    OIHW ``w_shape``) + ``bias`` (O,) float32; ``xb``, the input's bf16 bits, a workspace."""
    O, C, KH, KW = w_shape
    x = te.placeholder(tuple(x_shape), "float32", "x")
    w = te.placeholder((-(-O // LANES), -(-C // 2), KH, KW, LANES, 2), "int16", "w")
    bias = te.placeholder((O,), "float32", "bias")
    xb = bf16_input(x, pads)
    acc = x86_dot.conv2d_acc(xb, w, strides, "float32", name="conv_bf16")
    N, _, OH, OW, _ = acc.shape
    out = te.compute((N, O, OH, OW), lambda n, o, h, ww: acc[n, o // LANES, h, ww, o % LANES]
                     + bias[o], name="conv_bf16_out")
    s = te.create_schedule(out)
    schedule_conv2d_bf16(s, acc, out)
    return s, [x, w, bias, xb, out]


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
