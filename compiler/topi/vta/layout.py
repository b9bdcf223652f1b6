"""Packed layouts for the accelerator, and the numpy reference of its quantized ops.

Layouts (channels zero-padded to block multiples, batch to BATCH):

- activations NCHW -> ``NCHW{BATCH}n{BLOCK_IN}c``: shape ``(N/B, C/BI, H, W, B, BI)``;
- weights OIHW -> ``OIHW{BLOCK_OUT}o{BLOCK_IN}i``: ``(O/BO, C/BI, KH, KW, BO, BI)``;
- bias (O,) int32 -> ``(O/BO, B, BO)`` (the same row for every batch lane: one ACC element per
  output-channel block); per-channel shifts (O,) pack the same way;
- outputs ``(N/B, O/BO, OH, OW, B, BO)`` -> NCHW, cropped to the real N and O;
- matrices ``(M, K)`` -> tiles ``(M/r, K/c, r, c)`` (``pack_matrix``): a GEMM's input as
  ``(M/BATCH, K/BLOCK_IN, BATCH, BLOCK_IN)``, its weights ``(N, K)`` as ``(N/BLOCK_OUT,
  K/BLOCK_IN, BLOCK_OUT, BLOCK_IN)``, its result ``(M/BATCH, N/BLOCK_OUT, BATCH, BLOCK_OUT)``.

``conv2d_reference`` is the op the accelerator computes, on the unpacked
tensors: int8 x int8 products summed in int32 (wrapping), plus bias, arithmetic
shift right, [multiply and round: a scale that is not a power of two], [add the output's
zero point], relu (max zero point), clip to [-128, 127], cast to int8.
``add_reference`` is the residual add: int8 operands shifted left to a common
exponent and summed in int32 (wrapping), rounded, shifted right, relu, clip.
"""
from __future__ import annotations

import numpy as np


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def pack_nchw(x: np.ndarray, batch: int, block: int) -> np.ndarray:
    """NCHW -> (N/B, C/BI, H, W, B, BI), zero-padded."""
    N, C, H, W = x.shape
    p = np.zeros((_ceil(N, batch) * batch, _ceil(C, block) * block, H, W), x.dtype)
    p[:N, :C] = x
    return np.ascontiguousarray(
        p.reshape(-1, batch, p.shape[1] // block, block, H, W).transpose(0, 2, 4, 5, 1, 3))


def pack_oihw(w: np.ndarray, block_out: int, block_in: int) -> np.ndarray:
    """OIHW -> (O/BO, C/BI, KH, KW, BO, BI), zero-padded."""
    O, C, KH, KW = w.shape
    p = np.zeros((_ceil(O, block_out) * block_out, _ceil(C, block_in) * block_in, KH, KW), w.dtype)
    p[:O, :C] = w
    return np.ascontiguousarray(
        p.reshape(-1, block_out, p.shape[1] // block_in, block_in, KH, KW).transpose(0, 2, 4, 5, 1, 3))


def pack_bias(b: np.ndarray, batch: int, block_out: int) -> np.ndarray:
    """(O,) -> (O/BO, B, BO) int32, each batch lane a copy."""
    O = b.shape[0]
    p = np.zeros(_ceil(O, block_out) * block_out, np.int32)
    p[:O] = b
    return np.ascontiguousarray(np.broadcast_to(p.reshape(-1, 1, block_out),
                                                (p.size // block_out, batch, block_out)))


def pack_matrix(a: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """(M, K) -> (ceil(M/rows), ceil(K/cols), rows, cols) tiles, zero-padded; dtype kept."""
    M, K = a.shape
    p = np.zeros((_ceil(M, rows) * rows, _ceil(K, cols) * cols), a.dtype)
    p[:M, :K] = a
    return np.ascontiguousarray(p.reshape(-1, rows, p.shape[1] // cols, cols).transpose(0, 2, 1, 3))


def unpack_matrix(t: np.ndarray, m: int | None = None, k: int | None = None) -> np.ndarray:
    """(M/r, K/c, r, c) tiles -> (M, K), cropped to ``m`` rows and ``k`` columns if given."""
    MB, KB, r, c = t.shape
    return np.ascontiguousarray(t.transpose(0, 2, 1, 3).reshape(MB * r, KB * c)[:m, :k])


def unpack_nchw(y: np.ndarray, n: int, c: int) -> np.ndarray:
    """(N/B, C/BO, H, W, B, BO) -> NCHW cropped to n, c."""
    NB, CB, H, W, B, BO = y.shape
    return np.ascontiguousarray(y.transpose(0, 4, 1, 5, 2, 3).reshape(NB * B, CB * BO, H, W)[:n, :c])


def requantize(acc: np.ndarray, shift, relu: bool, mult=None, post: int = 15,
               zero: int = 0) -> np.ndarray:
    """int32 accumulators -> int8: ``>> shift`` (arithmetic), [multiply], + ``zero``, relu
    (max ``zero``: the output's zero point is real 0), clip, cast.

    ``shift``: an int, or one int per channel (axis 1 of ``acc``; per-channel weights).
    ``mult`` (an int in [1, 32767] or one per channel; None: none) with ``post`` (15..46):
    a scale that is not a power of two (``compiler.quant.qdq``), as the ALU does it in
    int32: ``t = (t * mult) >> (post - 15)``, then ``(t + 2**14) >> 15``, which is
    ``t * mult / 2**post`` rounded half up (``>>`` of a ``>>`` is one floor)."""
    def per(v):
        v = np.asarray(v, np.int64)
        return v.reshape((1, -1) + (1,) * (acc.ndim - 2)) if v.ndim else v
    y = acc.astype(np.int32) >> per(shift).astype(np.int32)
    if mult is not None:
        wrap = lambda v: ((v + (1 << 31)) % (1 << 32) - (1 << 31))  # noqa: E731 (int32)
        y = wrap(y.astype(np.int64) * per(mult)) >> (post - 15)
        y = (wrap(y + (1 << 14)) >> 15).astype(np.int32)
    y = y + np.int32(zero)
    if relu:
        y = np.maximum(y, zero)
    return np.clip(y, -128, 127).astype(np.int8)


def conv2d_reference(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None = None,
                     strides=(1, 1), padding=(0, 0), shift=0,
                     relu: bool = False, mult=None, post: int = 15, zero: int = 0) -> np.ndarray:
    """Quantized conv2d on NCHW int8 ``x`` and OIHW int8 ``w`` (module docstring); NCHW int8.
    ``shift``: an int, or one per output channel (O,); ``mult``, ``post``, ``zero`` (the
    output's zero point): ``requantize``. Pads are 0."""
    sh, sw = strides
    ph, pw = padding
    N, C, H, W = x.shape
    O, _, KH, KW = w.shape
    xp = np.zeros((N, C, H + 2 * ph, W + 2 * pw), np.int64)
    xp[:, :, ph:ph + H, pw:pw + W] = x
    OH, OW = (H + 2 * ph - KH) // sh + 1, (W + 2 * pw - KW) // sw + 1
    acc = np.zeros((N, O, OH, OW), np.int64)
    for kh in range(KH):
        for kw in range(KW):
            patch = xp[:, :, kh:kh + sh * (OH - 1) + 1:sh, kw:kw + sw * (OW - 1) + 1:sw]
            acc += np.einsum("nchw,oc->nohw", patch, w[:, :, kh, kw].astype(np.int64))
    if bias is not None:
        acc += np.asarray(bias, np.int64)[None, :, None, None]
    acc = ((acc + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)  # int32 wrapping
    return requantize(acc, shift, relu, mult, post, zero)


def dense_reference(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None = None,
                    shift=0, relu: bool = False, mult=None, post: int = 15,
                    zero: int = 0) -> np.ndarray:
    """Quantized dense: ``x`` (N, C) int8, ``w`` (O, C) int8 -> (N, O) int8."""
    return conv2d_reference(x[:, :, None, None], w[:, :, None, None], bias, shift=shift,
                            relu=relu, mult=mult, post=post, zero=zero)[:, :, 0, 0]


def add_reference(a: np.ndarray, b: np.ndarray, la: int, lb: int, shift: int,
                  relu: bool) -> np.ndarray:
    """Quantized residual add of int8 ``a``, ``b`` (one shape): ``s = (a << la) + (b << lb)``
    in int32 (wrapping); ``(s + 2**(shift-1)) >> shift`` when ``shift`` > 0; relu; clip;
    int8 of the same shape. Shifts are in [0, 31]."""
    s = (a.astype(np.int64) << la) + (b.astype(np.int64) << lb)
    if shift:
        s += 1 << (shift - 1)
    s = ((s + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)  # int32 wrapping
    return requantize(s, shift, relu)
