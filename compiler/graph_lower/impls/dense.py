"""Dense layers and matrix products.

* ``dense``: ``x[..., K] @ w[N, K].T``, the weight packed ``[N/nb, K, nb]``
  (``topi.dense``); at compile time where a constant feeds it, else in the kernel.
* ``matmul_dense``: numpy ``matmul`` whose right operand is a 2-D constant:
  the same kernel with the weight packed from ``[K, N]``.
* ``batch_matmul``: any other ``matmul`` (two activations, numpy broadcasting
  over the batch axes), flattened to ``[B, M, K] @ [B, K, N]``; with ``pack_b`` the
  right operand is packed into ``[B, ceil(N/nb), K, nb]`` panels in the kernel first.

Knobs (defaults are the hand-picked schedule): ``dense_block`` (nb, a divisor of
N, or for a GEMM its panel width, the weight zero-padded up to a multiple), ``mr``
(rows per register tile, a cap: ``topi.dense._row_tile``), ``par``
(``topi.dense.DENSE_PAR``: ``"tiles"``, ``"rows"`` or ``"panels"``), ``nb``
(batch_matmul columns per register tile, a cap likewise), ``pack_b``, ``algorithm``
(large even 2-D products: :data:`FAST_MATMUL`, ``"gemm"`` by default; Strassen-like
products over the GEMM's register tile, ``compiler.topi.strassen``; ``dense`` /
``matmul_dense`` pack B's sums at compile time, ``batch_matmul`` in the kernel).

Default point: for a matrix-vector-like product (M < ``GEMM_MIN_ROWS`` rows) the
historical one, a one-vector block (``topi.dense.dense_block``), mr 4, ``"tiles"``.
For a GEMM (M >= ``GEMM_MIN_ROWS``) a register tile of half the vector registers
(:func:`_gemm_block`: AVX-512 16 accumulators, ``mr x nb`` = 4 x 4 vectors or 8 x 2;
AVX2 8, 2 x 4 or 4 x 2), in ``"panels"`` order:
1024^3 fp32 on one Zen 4 core took 19.1-19.6 ms of CPU time against 19.4-20.5 ms for
the 4 x 16 tile and 21.1-22.2 ms for numpy/OpenBLAS, in one run (``bench/tune_models.py
--parts matmul`` gives the ratio to numpy).
"""
from __future__ import annotations

import numpy as np

from compiler import te
from compiler.graph import Op
from compiler.tir import ir
from compiler.topi import dense as tdense
from compiler.topi import injective as inj
from compiler.topi import strassen as tstrassen
from compiler.topi.injective import Lazy

from ..master import MasterKind
from ..space import ConfigSpace, Knob
from ..strategy import register

_MR = Knob("mr", (1, 2, 4, 8), 4)

#: rows from which a product counts as a GEMM and gets the large register tile
GEMM_MIN_ROWS = 64


#: vector lanes (fp32) -> accumulator vectors of a GEMM register tile: half the
#: registers (AVX-512: 32 zmm, AVX2: 16 ymm), the rest for the B vectors and A broadcasts
_GEMM_ACCUMULATORS = {16: 16, 8: 8}


def _gemm_block(N: int, lanes: int) -> "tuple[int, int] | None":
    """(nb, mr) of the GEMM register tile for fp32 vectors of ``lanes`` lanes
    (:data:`_GEMM_ACCUMULATORS` vectors): 4 vectors wide x (accumulators / 4) rows or
    2 wide x twice the rows, whichever pads N less (AVX-512, N = 1000: 64, one partial
    panel of 40; N = 80: 32), 4 vectors wide on a tie (AVX2: 4 x 8 lanes x 2 rows, 1024^3
    on one Zen 1 core 61.6-67.2 ms of CPU time against 68.9-70.8 ms for 2 x 8 x 4 rows and
    73.5-81.3 ms for the old 2 x 8 x 4 in ``"tiles"`` order, in one run each). None for
    N under 2 vectors or other vector widths (the old tile)."""
    acc = _GEMM_ACCUMULATORS.get(lanes)
    if acc is None or N < 2 * lanes:
        return None
    tiles = ((4 * lanes, acc // 4), (2 * lanes, acc // 2))
    return min(tiles, key=lambda t: -(-N // t[0]) * t[0])


def _dense_space(w, M: int, N: int) -> ConfigSpace:
    lanes = w.target.vector_lanes(32)
    gemm = _gemm_block(N, lanes) if M >= GEMM_MIN_ROWS else None
    blocks = tuple(b for b in (4 * lanes, 2 * lanes, 16, 8, 4, 2, 1)
                   if N % b == 0 or (gemm and b == gemm[0]))
    blocks = tuple(dict.fromkeys(blocks))
    nb, mr, par = (gemm + ("panels",)) if gemm else (tdense.dense_block(N), 4, "tiles")
    return ConfigSpace((Knob("dense_block", blocks, nb), Knob("mr", _MR.candidates, mr),
                        Knob("par", tdense.DENSE_PAR, par)))


def _rows(shape) -> int:
    return int(np.prod(shape[:-1]))


def _schedule_dense(s, acc, out, cfg):
    tdense.schedule_dense(s, acc, out, cfg["mr"], cfg["par"], cfg["dense_block"])


def _lead_view(acc, shape):
    """Graph-shaped Lazy over a 2-D [M, N'] accumulator (leading axes flattened into M;
    N' >= N, the graph's last axis: the columns past N are a padded panel's)."""
    M, N = acc.shape[0], shape[-1]
    return inj.reshape(Lazy((M, N), acc.dtype, lambda i, j: acc[i, j]), shape)


def _dense_compute(x2: Lazy, w, name):
    """[M, ceil(N/nb)*nb]: every column of the packed weight, so no tile has a tail."""
    M, K = x2.shape
    Nb, _, nb = w.shape
    k = te.reduce_axis(K, "k")
    return te.compute((M, Nb * nb), lambda i, j: te.sum(x2(i, k) * w[j // nb, k, j % nb], axis=k),
                      name=name)


#: ``algorithm`` knob of ``dense`` / ``matmul_dense`` -> (``topi.strassen`` table, levels);
#: "gemm": the plain GEMM. Offered for 2-D float32 products (``dense``: with a constant
#: weight; ``batch_matmul``: B's sums packed in the kernel) whose leaves (M, N, K over
#: ``2**levels``) are all at least :data:`FAST_MIN_LEAF` and whole (N/2**levels a multiple
#: of 64, so that every ``dense_block`` divides it); the products run the GEMM's ``mr`` x
#: ``dense_block`` (``nb``) register tile.
FAST_MATMUL = {"gemm": None, "strassen1": ("strassen", 1), "strassen2": ("strassen", 2),
               "winograd1": ("winograd", 1), "winograd2": ("winograd", 2)}
#: the smallest leaf side: the AVX2 GEMM runs 256^3 near its 1024^3 rate (one Zen 1 core,
#: 0.91 ms of CPU time, 36.9 GFLOP/s; 1024^3 35.3 GFLOP/s), so 1024^3 takes two levels
FAST_MIN_LEAF = 256


def _fast_algorithms(w, N: int) -> tuple:
    """The ``algorithm`` candidates of a product of ``N`` output columns: the GEMM, and the
    fast ones whose grid fits (2-D float32 operands)."""
    n = w.node
    sa = n.src[0].shape
    if len(sa) != 2 or len(n.src[1].shape) != 2 or n.dtype != "float32":
        return ("gemm",)
    M, K = sa
    return ("gemm",) + tuple(
        a for a, spec in FAST_MATMUL.items() if spec is not None
        and min(M, N, K) >= FAST_MIN_LEAF * 2 ** spec[1]
        and M % 2 ** spec[1] == 0 and K % 2 ** spec[1] == 0 and N % (64 * 2 ** spec[1]) == 0)


def _with_algorithm(space: ConfigSpace, w, N: int) -> ConfigSpace:
    """``space`` plus, where :func:`_fast_algorithms` offers more than the GEMM,
    ``algorithm`` (default ``"gemm"``)."""
    algorithms = _fast_algorithms(w, N)
    if len(algorithms) == 1:
        return space
    return ConfigSpace(space.knobs + (Knob("algorithm", algorithms, "gemm"),))


def _fast_space(w, N: int) -> ConfigSpace:
    """``_dense_space`` (+ ``algorithm`` for a constant right operand: packed at compile time)."""
    space = _dense_space(w, _rows(w.node.src[0].shape), N)
    return _with_algorithm(space, w, N) if w.is_const(w.node.src[1]) else space


def _fast(cfg):
    return FAST_MATMUL[cfg.as_dict().get("algorithm", "gemm")]


def _schedule_fast_or_dense(s, acc, out, cfg):
    if _fast(cfg) is None:
        return _schedule_dense(s, acc, out, cfg)
    return tstrassen.schedule_strassen(s, acc, out, cfg["mr"], cfg["dense_block"])


def _fast_packs(kind: str):
    """``packs`` of a constant right operand that the GEMM packs as ``kind`` (``dense`` from
    ``[N, K]``, ``dense_t`` from ``[K, N]``) and a fast algorithm as ``strassen1`` ...
    (with the same ``_t`` suffix)."""
    tail = kind[len("dense"):]

    def packs(w, cfg):
        fast = _fast(cfg)
        return {1: f"{kind if fast is None else f'{fast[0]}{fast[1]}{tail}'}:{cfg['dense_block']}"}
    return packs


def _fast_compute(b, x2, w, shape, cfg):
    """(view, acc) of the fast algorithm ``cfg`` picks over the packed right operands ``w``
    (a constant, or a stage of the kernel); its left operands and products are the
    kernel's workspace."""
    acc = tstrassen.strassen_matmul(x2, x2.shape, w, *_fast(cfg), name=b.fresh("strassen"))
    prod = acc.op.reads()[0]
    b.workspace.extend((prod.op.reads()[0], prod))
    return _lead_view(acc, shape), acc


@register(Op.DENSE, "dense", kind=MasterKind.DENSE, schedule=_schedule_fast_or_dense,
          space=lambda w: _fast_space(w, w.node.src[1].shape[0]), packs=_fast_packs("dense"))
def _dense(b, n, a, cfg):
    x = a[0]
    K = x.shape[-1]
    M = int(np.prod(x.shape[:-1]))
    x2 = inj.reshape(x, (M, K))
    if _fast(cfg) is not None:             # offered for a 2-D x and a constant weight only
        return _fast_compute(b, x2, a[1]._tensor, n.shape, cfg)
    if n.src[1] in b.packed:
        w = a[1]._tensor
    else:                                  # a computed weight: packed in the kernel
        wt = b.tensor_of(a[1], "w")
        N = wt.shape[0]
        nb = cfg["dense_block"]
        zero = ir.const(0.0, wt.dtype)

        def wpack(jo, k, ji):              # zero rows past N (a padded block)
            if N % nb == 0:
                return wt[jo * nb + ji, k]
            return te.if_then_else(jo * nb + ji < N, wt[jo * nb + ji, k], zero)
        w = te.compute((-(-N // nb), K, nb), wpack, name=b.fresh("wpack"))
        b.workspace.append(w)
    acc = _dense_compute(x2, w, b.fresh("dense"))
    return _lead_view(acc, n.shape), acc


def _constant_matrix(w):
    n = w.node
    sa, sb = n.src[0].shape, n.src[1].shape
    if len(sb) != 2 or len(sa) < 2:
        return f"operands {list(sa)} @ {list(sb)}, needs a >= 2-D left and a 2-D right operand"
    return None if w.is_const(n.src[1]) else "the right operand is not a constant input"


@register(Op.MATMUL, "matmul_dense", kind=MasterKind.DENSE, schedule=_schedule_fast_or_dense,
          space=lambda w: _fast_space(w, w.node.src[1].shape[1]), packs=_fast_packs("dense_t"),
          when=(_constant_matrix,), plevel=15)
def _matmul_dense(b, n, a, cfg):
    sa = n.src[0].shape
    K = sa[-1]
    M = int(np.prod(sa[:-1]))
    x2 = inj.reshape(a[0], (M, K))
    if _fast(cfg) is not None:             # offered for 2-D products only
        return _fast_compute(b, x2, a[1]._tensor, n.shape, cfg)
    acc = _dense_compute(x2, a[1]._tensor, b.fresh("dense"))
    return _lead_view(acc, n.shape), acc


def _batch_matmul_space(w) -> ConfigSpace:
    """mr, nb (caps) and ``pack_b`` (pack B into ``[B, ceil(N/nb), K, nb]`` panels at run
    time, zero-padded). Default: the GEMM tile of :func:`_gemm_block` with packing for
    M >= ``GEMM_MIN_ROWS`` on AVX-512 and AVX2, else the historical 4 x 16 unpacked."""
    sa, sb = w.node.src[0].shape, w.node.src[1].shape
    M = sa[-2] if len(sa) > 1 else 1
    N = sb[-1] if len(sb) > 1 else 1
    gemm = _gemm_block(N, w.target.vector_lanes(32)) if M >= GEMM_MIN_ROWS else None
    nb, mr, pack = (gemm + (True,)) if gemm else (16, 4, False)
    return _with_algorithm(ConfigSpace((
        Knob("mr", _MR.candidates, mr), Knob("nb", (4, 8, 16, 32, 64), nb),
        Knob("pack_b", (False, True), pack))), w, N)


def _schedule_batch_matmul(s, acc, out, cfg):
    if _fast(cfg) is None:
        return tdense.schedule_batch_matmul(s, acc, out, cfg["mr"], cfg["nb"])
    return tstrassen.schedule_strassen(s, acc, out, cfg["mr"], cfg["nb"])


@register(Op.MATMUL, "batch_matmul", kind=MasterKind.BATCH_MATMUL,
          space=_batch_matmul_space, schedule=_schedule_batch_matmul)
def _batch_matmul(b, n, a, cfg):
    xa, xb = a
    sa, sb = n.src[0].shape, n.src[1].shape
    if _fast(cfg) is not None:             # offered for 2-D operands only: B's sums packed
        bp = tstrassen.pack_strassen_b(xb, sb, *_fast(cfg), cfg["nb"],
                                       name=b.fresh("strassen_b"))
        b.workspace.append(bp)
        return _fast_compute(b, xa, bp, n.shape, cfg)
    # numpy.matmul: a 1-D operand is a row (a) or a column (b) vector, dropped afterwards
    if len(sa) == 1:
        xa, sa = inj.reshape(xa, (1,) + sa), (1,) + sa
    if len(sb) == 1:
        xb, sb = inj.reshape(xb, sb + (1,)), sb + (1,)
    batch = tuple(np.broadcast_shapes(sa[:-2], sb[:-2]))
    B = int(np.prod(batch)) if batch else 1
    M, K, N = sa[-2], sa[-1], sb[-1]

    def operand(x: Lazy, shape):
        full = batch + tuple(shape[-2:])

        def f(bb, i, j):
            idx = inj._unflat(bb, batch) if batch else []
            return inj.broadcast_read(x, full, list(idx) + [i, j])
        return Lazy((B,) + tuple(shape[-2:]), x.dtype, f)
    A3, B3 = operand(xa, sa), operand(xb, sb)
    if cfg["pack_b"]:
        bp = tdense.pack_batch_b(B3, (B, K, N), cfg["nb"], name=b.fresh(tdense.BPACK))
        b.workspace.append(bp)
        acc = tdense.batch_matmul_packed(A3, bp, M, name=b.fresh("matmul"))
        view = Lazy((B, M, N), acc.dtype, lambda bb, i, j: acc[bb, i, j])   # padded columns off
        return inj.reshape(view, n.shape), acc
    k = te.reduce_axis(K, "k")
    acc = te.compute((B, M, N), lambda bb, i, j: te.sum(A3(bb, i, k) * B3(bb, k, j), axis=k),
                     name=b.fresh("matmul"))
    return inj.reshape(Lazy.of(acc), n.shape), acc
