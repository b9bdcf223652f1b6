"""Winograd convolution F(m x m, 3 x 3) for 3x3 stride-1 convs (NCHW data, blocked NCHWc
inside), and its CPU schedule.

Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks" (2016): each
``m x m`` output tile is ``A^T [ (G g G^T) . (B^T d B) ] A`` over an ``alpha x alpha``
input tile ``d`` (``alpha = m + 2``), so a tile costs ``alpha^2`` multiplies per
(input, output) channel pair instead of ``9 m^2``: 2.25x fewer for F(2x2,3x3), 4x
fewer for F(4x4,3x3). The matrices are the paper's (interpolation points 0, +-1 for
m = 2; 0, +-1, +-2 for m = 4). F(4x4,3x3) amplifies rounding more (its matrices hold
4, 5 and 1/24): check a model's agreement before using it.

Stages (``alpha = m + 2``, ``P = N * ceil(OH/m) * ceil(OW/m)`` tiles, ``ob`` output
channels per block):

* weight transform, at compile time (:func:`transform_weight`): OIHW ``[O, C, 3, 3]``
  -> ``U [alpha, alpha, O/ob, C, ob]`` (float32, computed in float64);
* ``_pad``: the input zero-padded to whole tiles and blocked by ``cb`` channels
  (:func:`input_block`), ``[N, C/cb, TH*m + 2, TW*m + 2, cb]``, so the input transform
  runs on whole vectors of channels (the schedule makes it one channel block at a time);
* ``_Vr`` then ``_V``: input transform ``B^T d B`` in two passes (rows, then columns),
  ``[alpha, alpha, P, C]``;
* ``_M``: one GEMM per (alpha, alpha) point, ``[alpha, alpha, O/ob, P, ob]``, the
  sum over input channels of ``V * U``;
* ``_Y`` then the returned accumulation: output transform ``A^T M A`` in two passes,
  ``_Y [m, alpha, O/ob, P, ob]`` then the direct conv's blocked layout
  ``[N, O/ob, OH, OW, ob]`` (so the epilogue reads it as it reads ``conv2d_nchw``'s).

The transforms' coefficients are Python constants: each pass's value is a select over
the (unrolled) transform index of the explicit sums of the non-zero terms,
which the simplifier folds once the schedule unrolls those loops.
"""
from __future__ import annotations

from fractions import Fraction as F

import numpy as np

from compiler import te
from compiler.tir import ir

from .nn_util import pad_spatial, window_out

#: m -> (B^T, G, A^T), exact fractions (Lavin and Gray 2016, section 4)
MATRICES = {
    2: ([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]],
        [[1, 0, 0], [F(1, 2), F(1, 2), F(1, 2)], [F(1, 2), F(-1, 2), F(1, 2)], [0, 0, 1]],
        [[1, 1, 1, 0], [0, 1, -1, -1]]),
    4: ([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
         [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]],
        [[F(1, 4), 0, 0], [F(-1, 6), F(-1, 6), F(-1, 6)], [F(-1, 6), F(1, 6), F(-1, 6)],
         [F(1, 24), F(1, 12), F(1, 6)], [F(1, 24), F(-1, 12), F(1, 6)], [0, 0, 1]],
        [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]]),
}


def _check_m(m) -> None:
    if m not in MATRICES:
        raise ValueError(f"Winograd tile m must be one of {sorted(MATRICES)}, not {m!r}")


def transform_weight(weight: np.ndarray, m: int, ob: int) -> np.ndarray:
    """numpy, at compile time: OIHW ``[O, C, 3, 3]`` float32 -> ``G g G^T`` packed as
    ``[alpha, alpha, ceil(O/ob), C, ob]`` float32 (computed in float64; zero channels
    past O).

    Raises:
        ValueError: ``m`` not 2 or 4, or a kernel that is not 3x3.
    """
    from .conv2d import pad_out_channels
    _check_m(m)
    if tuple(weight.shape[2:]) != (3, 3):
        raise ValueError(f"Winograd weight transform: kernel {weight.shape} needs a 3x3 kernel "
                         "(F(m x m, 3x3) transforms only those; use the direct conv)")
    weight = pad_out_channels(weight, ob)       # zero channels up to a multiple of ob
    O, C, KH, KW = weight.shape
    G = np.array(MATRICES[m][1], dtype=np.float64)
    u = np.einsum("ak,ockl,bl->aboc", G, weight.astype(np.float64), G)   # [a, a, O, C]
    a = m + 2
    u = u.reshape(a, a, O // ob, ob, C).transpose(0, 1, 2, 4, 3)
    return np.ascontiguousarray(u.astype(weight.dtype))


def _row(mat, idx, read):
    """``sum_k mat[idx][k] * read(k)`` for the ``idx`` in ``[0, len(mat))`` the schedule
    unrolls: a select chain over the rows, each the explicit sum of its non-zero terms."""
    def row(i):
        out = None
        for k, c in enumerate(mat[i]):
            if c:
                x = read(k)
                x = x if c == 1 else (-x if c == -1 else x * ir.const(float(c), "float32"))
                out = x if out is None else out + x
        return out
    out = row(len(mat) - 1)
    for i in reversed(range(len(mat) - 1)):
        out = ir.select(ir.eq(idx, i), row(i), out)
    return out


def input_block(C: int) -> int:
    """Channels per block of the padded input copy (the input transform's vector): the
    largest of 16, 8, 4, 2, 1 dividing ``C``."""
    return next(b for b in (16, 8, 4, 2, 1) if C % b == 0)


def winograd_conv2d_nchw(data, kernel, m: int, pads=(1, 1, 1, 1), name: str = "conv"):
    """Winograd F(m x m, 3x3) conv of NCHW ``data`` ``[N, C, H, W]`` with a transformed kernel
    ``[alpha, alpha, O/ob, C, ob]`` (:func:`transform_weight`); stride 1, no dilation.

    Returns ``(acc, stages)``: ``acc`` ``[N, O/ob, OH, OW, ob]`` (the output transform) and
    ``stages``, the root stages ``(V, M)`` (scratch the runtime provides; the padded copy
    is made per channel block inside the input transform's loop).

    Raises:
        ValueError: ``m`` not 2 or 4, or data and kernel channels disagree.
    """
    _check_m(m)
    BT, _, AT = MATRICES[m]
    a = m + 2
    N, C, H, W = data.shape
    a1, a2, Ob, C2, ob = kernel.shape
    if (a1, a2, C2) != (a, a, C):
        raise ValueError(f"winograd_conv2d_nchw: data {data.shape} and kernel {kernel.shape} "
                         f"disagree; F({m}x{m},3x3) needs a [{a}, {a}, O/ob, {C}, ob] kernel")
    OH = window_out(H, 3, 1, pads[0], pads[2], 1)
    OW = window_out(W, 3, 1, pads[1], pads[3], 1)
    TH, TW = -(-OH // m), -(-OW // m)
    P = N * TH * TW
    cb = input_block(C)
    top, left = pads[0], pads[1]

    def pad_fn(n, co, h, w, ci):
        y, x = h - top, w - left
        inside = ir.logical_and(y >= 0, y < H, x >= 0, x < W)
        return te.if_then_else(inside, data[n, co * cb + ci, y, x], ir.const(0.0, data.dtype))
    padded = te.compute((N, C // cb, TH * m + 2, TW * m + 2, cb), pad_fn, name=name + "_pad")

    def d(p, c, k, l):
        # batch 1 (the usual case) spelled without the batch term: simpler indices to lower
        n, th = (0, p // TW) if N == 1 else (p // (TH * TW), p // TW % TH)
        tw = p % TW
        return padded[n, c // cb, th * m + k, tw * m + l, c % cb]
    # B^T d B in two passes (rows, then columns): half the adds of the direct sums for m = 4
    R = te.compute((a, a, P, C), lambda e, l, p, c: _row(BT, e, lambda k: d(p, c, k, l)),
                   name=name + "_Vr")
    V = te.compute((a, a, P, C), lambda e, nu, p, c: _row(BT, nu, lambda l: R[e, l, p, c]),
                   name=name + "_V")
    c = te.reduce_axis(C, "c")
    M = te.compute((a, a, Ob, P, ob),
                   lambda e, nu, oc, p, oi: te.sum(V[e, nu, p, c] * kernel[e, nu, oc, c, oi], axis=c),
                   name=name + "_M")

    # A^T M A in two passes as well
    Y = te.compute((m, a, Ob, P, ob), lambda i, nu, oc, p, oi: _row(
        AT, i, lambda e: M[e, nu, oc, p, oi]), name=name + "_Y")

    def y_fn(n, oc, h, w, oi):
        p = n * (TH * TW) + (h // m) * TW + w // m
        return _row(AT, w % m, lambda nu: Y[h % m, nu, oc, p, oi])
    acc = te.compute((N, Ob, OH, OW, ob), y_fn, name=name)
    return acc, (V, M)


def _tiles_per_step(P: int, cap: int) -> int:
    """Tiles per GEMM register tile: a divisor of ``P`` in ``[cap/2, cap]`` (no tail
    iteration) if there is one, else ``min(cap, P)``."""
    return next((d for d in range(min(cap, P), (cap + 1) // 2 - 1, -1) if P % d == 0 and d > 0),
                min(cap, P))


def schedule_winograd_nchw(s, acc, out, tile: int = 14, par_depth: int = 3):
    """Schedule :func:`winograd_conv2d_nchw`: ``acc`` its output transform, ``out`` the NCHW
    epilogue stage reading it (elementwise consumers inlined).

    * padded copy and input transform in one parallel region over the ``C/cb`` channel
      blocks: per block its padded copy ``[N, 1, H', W', cb]``, then per tile the row pass
      ``_Vr`` and the column pass, unrolled over the ``alpha x alpha`` points and
      vectorised over the ``cb`` channels;
    * GEMM: parallel over (alpha point, output-channel block pair), a register tile of
      ``tile`` accumulator vectors: ``tile / 2`` tiles (a divisor of P when one is near) x 2
      output-channel blocks (1 when O/ob is odd) x ``ob`` vectorised channels,
      reduced over the input channels;
    * output transform (both passes) at each ``m x m`` tile of the epilogue, vectorised
      over the ``ob`` output channels; the epilogue parallel over (n, channel block, tile row)
      (``par_depth`` 3; 2: (n, channel block); 0: serial).

    Raises:
        ValueError: ``par_depth`` not 0, 2 or 3.
    """
    if par_depth not in (0, 2, 3):
        raise ValueError(f"par_depth must be 0, 2 or 3, not {par_depth!r}")
    M = acc.op.reads()[0].op.reads()[0]
    V = M.op.reads()[0]
    R = V.op.reads()[0]
    pad = R.op.reads()[0]
    a = V.shape[0]
    m = a - 2
    cb = pad.shape[4]
    e, nu, p, c = s[V].op.axis
    co, ci = s[V].split(c, factor=cb)
    s[V].reorder(co, p, e, nu, ci)
    s[V].parallel(co)
    s[pad].compute_at(s[V], co)
    s[pad].unroll(s[pad].op.axis[4])
    s[V].unroll(e)
    s[V].unroll(nu)
    s[V].vectorize(ci)
    s[R].compute_at(s[V], p)
    re, rl, _, rc = s[R].op.axis
    s[R].unroll(re)
    s[R].unroll(rl)
    s[R].vectorize(rc)
    mc = s.cache_write(M, "local")
    e, nu, oc, p, oi = s[M].op.axis
    Ob, P = M.shape[2], M.shape[3]
    pair = 2 if Ob % 2 == 0 else 1
    reg = _tiles_per_step(P, max(1, tile // pair))
    oco, oci = s[M].split(oc, factor=pair)
    po, pi = s[M].split(p, factor=reg)
    s[M].reorder(e, nu, oco, po, oci, pi, oi)
    s[M].parallel(s[M].fuse(e, nu, oco))
    s[M].unroll(oci)
    s[M].unroll(pi)
    s[M].vectorize(oi)
    s[mc].compute_at(s[M], po)
    ce, cnu, coc, cp, coi = s[mc].op.axis
    (rc,) = s[mc].op.reduce_axis
    s[mc].reorder(rc, coc, cp, coi)
    s[mc].unroll(coc)
    s[mc].unroll(cp)
    s[mc].vectorize(coi)
    n, o, h, w = s[out].op.axis
    ob = acc.shape[4]
    oo, oi = s[out].split(o, factor=ob)
    ho, hi = s[out].split(h, factor=m)
    wo, wi = s[out].split(w, factor=m)
    s[out].reorder(n, oo, ho, wo, oi, hi, wi)
    s[out].unroll(oi)
    s[out].unroll(hi)
    s[out].vectorize(wi)
    axes = (n, oo, ho)
    if par_depth:
        s[out].parallel(s[out].fuse(*axes[:par_depth]))
    Y = acc.op.reads()[0]
    for st in (Y, acc):
        s[st].compute_at(s[out], wo)
    yi, ynu, _, _, yoi = s[Y].op.axis
    s[Y].unroll(yi)
    s[Y].unroll(ynu)
    s[Y].vectorize(yoi)
    an, aoc, ah, aw, aoi = s[acc].op.axis
    s[acc].reorder(ah, aw, aoi)
    s[acc].unroll(ah)
    s[acc].unroll(aw)
    s[acc].vectorize(aoi)
    return s
