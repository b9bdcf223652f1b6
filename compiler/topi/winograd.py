"""Winograd convolution F(m x m, 3 x 3) for 3x3 stride-1 convs (NCHW data), and its CPU schedule.

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
* ``_pad``: the input zero-padded to whole tiles, ``[N, C, TH*m + 2, TW*m + 2]``;
* ``_V``: input transform ``B^T d B``, ``[alpha, alpha, C, P]``;
* ``_M``: one GEMM per (alpha, alpha) point, ``[alpha, alpha, O/ob, P, ob]``, the
  sum over input channels of ``V * U``;
* the returned accumulation: output transform ``A^T M A`` in the direct conv's blocked
  layout ``[N, O/ob, OH, OW, ob]`` (so the epilogue reads it as it reads
  ``conv2d_nchw``'s).

The transforms' coefficients are Python constants: each stage's value is a select
over the (unrolled) transform indices of the explicit sums of the non-zero terms,
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


def _terms(mat_l, mat_r, i, j):
    """The non-zero ``(coefficient, k, l)`` of ``sum_kl mat_l[i][k] * mat_r[j][l] * x[k][l]``."""
    return [(float(cl * cr), k, l) for k, cl in enumerate(mat_l[i]) if cl
            for l, cr in enumerate(mat_r[j]) if cr]


def _table(ei, ej, rows: int, cols: int, value):
    """``value(i, j)`` at ``(ei, ej) == (i, j)``: a select chain over the constant points."""
    out = value(rows - 1, cols - 1)
    for i in reversed(range(rows)):
        for j in reversed(range(cols)):
            if (i, j) != (rows - 1, cols - 1):
                out = ir.select(ir.logical_and(ir.eq(ei, i), ir.eq(ej, j)), value(i, j), out)
    return out


def _sum(terms, read):
    out = None
    for c, k, l in terms:
        x = read(k, l)
        x = x if c == 1.0 else (-x if c == -1.0 else x * ir.const(c, "float32"))
        out = x if out is None else out + x
    return out


def winograd_conv2d_nchw(data, kernel, m: int, pads=(1, 1, 1, 1), name: str = "conv"):
    """Winograd F(m x m, 3x3) conv of NCHW ``data`` ``[N, C, H, W]`` with a transformed kernel
    ``[alpha, alpha, O/ob, C, ob]`` (:func:`transform_weight`); stride 1, no dilation.

    Returns ``(acc, stages)``: ``acc`` ``[N, O/ob, OH, OW, ob]`` (the output transform) and
    ``stages``, the root stages ``(pad, V, M)`` (scratch the runtime provides).

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
    padded = pad_spatial(data, pads, 2, extra=(TH * m - OH, TW * m - OW), name=name + "_pad")

    def v_fn(e, nu, c, p):
        n, th, tw = p // (TH * TW), p // TW % TH, p % TW
        return _table(e, nu, a, a, lambda i, j: _sum(
            _terms(BT, BT, i, j), lambda k, l: padded[n, c, th * m + k, tw * m + l]))
    V = te.compute((a, a, C, P), v_fn, name=name + "_V")
    c = te.reduce_axis(C, "c")
    M = te.compute((a, a, Ob, P, ob),
                   lambda e, nu, oc, p, oi: te.sum(V[e, nu, c, p] * kernel[e, nu, oc, c, oi], axis=c),
                   name=name + "_M")

    def y_fn(n, oc, h, w, oi):
        p = n * (TH * TW) + (h // m) * TW + w // m
        return _table(h % m, w % m, m, m, lambda i, j: _sum(
            _terms(AT, AT, i, j), lambda e, nu: M[e, nu, oc, p, oi]))
    acc = te.compute((N, Ob, OH, OW, ob), y_fn, name=name)
    return acc, (padded, V, M)


def schedule_winograd_nchw(s, acc, out, tile: int = 8, par_depth: int = 3):
    """Schedule :func:`winograd_conv2d_nchw`: ``acc`` its output transform, ``out`` the NCHW
    epilogue stage reading it (elementwise consumers inlined).

    * input transform: parallel over (alpha, alpha) points fused with channels, the tile
      loop inner;
    * GEMM: parallel over (alpha point, output-channel block), a ``tile x ob`` register
      tile (unrolled tiles x vectorised output channels) over the input channels;
    * output transform at each ``m x m`` tile of the epilogue, vectorised over the ``ob``
      output channels; the epilogue parallel over (n, channel block, tile row)
      (``par_depth`` 3; 2: (n, channel block); 0: serial).
    """
    M = acc.op.reads()[0]
    V = M.op.reads()[0]
    pad = V.op.reads()[0]
    a = V.shape[0]
    m = a - 2
    if pad.op.name.endswith("_pad"):
        ax = pad.op.axis
        s[pad].parallel(s[pad].fuse(ax[0], ax[1]))
    e, nu, c, p = s[V].op.axis
    s[V].reorder(c, p, e, nu)
    s[V].parallel(c)
    s[V].unroll(e)
    s[V].unroll(nu)
    mc = s.cache_write(M, "local")
    e, nu, oc, p, oi = s[M].op.axis
    P = M.shape[3]
    reg = min(tile, P)
    po, pi = s[M].split(p, factor=reg)
    s[M].reorder(e, nu, oc, po, pi, oi)
    s[M].parallel(s[M].fuse(e, nu, oc))
    s[M].unroll(pi)
    s[M].vectorize(oi)
    s[mc].compute_at(s[M], po)
    ce, cnu, coc, cp, coi = s[mc].op.axis
    (rc,) = s[mc].op.reduce_axis
    s[mc].reorder(rc, cp, coi)
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
    if par_depth not in (0, 2, 3):
        raise ValueError(f"par_depth must be 0, 2 or 3, not {par_depth!r}")
    if par_depth:
        s[out].parallel(s[out].fuse(*axes[:par_depth]))
    s[acc].compute_at(s[out], wo)
    an, aoc, ah, aw, aoi = s[acc].op.axis
    s[acc].reorder(ah, aw, aoi)
    s[acc].unroll(ah)
    s[acc].unroll(aw)
    s[acc].vectorize(aoi)
    return s
