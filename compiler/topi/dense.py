"""Dense layers and batched matrix products: computes and CPU schedules.

* ``dense(x, w_packed)``: ``out[M, N] = x[M, K] @ w.T`` with the weight ``w[N, K]``
  packed at compile time into ``[N/nb, K, nb]`` (:func:`pack_dense_weight`) so the
  micro-kernel reads ``nb`` output columns contiguously (done once on the constant
  instead of every call).
* ``batch_matmul(a, b)``: ``out[B, M, N] = a[B, M, K] @ b[B, K, N]`` for two
  activations (attention scores and context).

Both schedules keep an ``mr x nb`` accumulator tile in vector registers
(rows unrolled, columns vectorised), reduce over K inside it, and run the
epilogue (bias, activation, residual) on the tile before storing it.
"""
from __future__ import annotations

import numpy as np

from compiler import te


def dense_block(n: int) -> int:
    """Column block of the packed weight: 16 (one AVX-512 vector), 8, or 1."""
    for b in (16, 8):
        if n % b == 0:
            return b
    return 1


def pack_dense_weight(w: np.ndarray, nb: int) -> np.ndarray:
    """numpy: ``w[N, K]`` -> ``[ceil(N/nb), K, nb]`` (rows past N, where ``nb`` does not
    divide N, are zero)."""
    N, K = w.shape
    if N % nb:
        w = np.concatenate([w, np.zeros((-N % nb, K), w.dtype)])
    return np.ascontiguousarray(w.reshape(-1, nb, K).transpose(0, 2, 1))


def dense(x, w_packed, name="dense"):
    """``x[M, K]``, ``w_packed[N/nb, K, nb]`` -> ``out[M, N]`` (float32 accumulation)."""
    M, K = x.shape
    Nb, K2, nb = w_packed.shape
    if K != K2:
        raise ValueError(f"dense: x has K={K}, packed weight {w_packed.shape} has K={K2}")
    k = te.reduce_axis(K, "k")
    return te.compute((M, Nb * nb),
                      lambda i, j: te.sum(x[i, k] * w_packed[j // nb, k, j % nb], axis=k), name=name)


def batch_matmul(a, b, name="matmul"):
    """``a[B, M, K] @ b[B, K, N]`` -> ``out[B, M, N]``."""
    B, M, K = a.shape
    B2, K2, N = b.shape
    if (B, K) != (B2, K2):
        raise ValueError(f"batch_matmul: shapes {a.shape} and {b.shape} do not multiply")
    k = te.reduce_axis(K, "k")
    return te.compute((B, M, N), lambda bb, i, j: te.sum(a[bb, i, k] * b[bb, k, j], axis=k), name=name)


def _divisor_at_most(n: int, cap: int) -> int:
    for f in range(min(n, cap), 0, -1):
        if n % f == 0:
            return f
    return 1


def _row_tile(M: int, mr: int) -> int:
    """Rows per register tile: the largest divisor of M at most ``mr`` if it is at least
    ``mr / 2`` and more than one row (or ``mr`` itself), else ``mr`` and a partial last tile
    (the lowering peels it off the full ones): M = 1021 (prime) with mr 4 or 2 runs 4- or
    2-row tiles, not 1-row ones (1021 x 1024 x 1024 on one Zen 1 core with AVX2's 2 x 32
    tile: 118.8 ms of CPU time in 1-row tiles)."""
    d = _divisor_at_most(M, mr)
    return d if d == mr or (d > 1 and 2 * d >= mr) else min(mr, M)


#: parallel loop orders of :func:`schedule_dense`
DENSE_PAR = ("tiles", "rows", "panels")

#: column panels from which a GEMM with a partial row tile runs its panels in parallel, else
#: its row tiles; and row tiles from which ``"rows"`` runs only them in parallel (two per
#: thread on the 2-core machines this is tuned on)
MIN_PARALLEL_PANELS = 4


def _partial_rows(M: int, m_tile: int) -> bool:
    """Whether the last row tile is partial. The lowering peels such a tile off a plain row
    loop, but where the row loop is fused with another it keeps the bound check in every
    tile, and the guarded rows are no longer vectorised: 1021 x 1024 x 1024 in 2 x 32
    tiles on one Zen 1 core took 94.7 ms of CPU time fused, 64-66 ms peeled."""
    return M % m_tile != 0


def schedule_dense(s, acc, out, mr: int = 4, par: str = "tiles", nb: "int | None" = None):
    """Schedule :func:`dense` (``acc``) with its epilogue stage ``out[M, N]`` (may be ``acc``).

    ``mr`` rows (a cap, :func:`_row_tile`) x ``nb`` columns per register tile
    (``mr * nb / 16`` zmm accumulators on AVX-512: 4 x 64 or 8 x 32 keep 16 of the 32
    registers busy, leaving room for the B vectors and A broadcasts). ``par``, one of
    :data:`DENSE_PAR`. ``nb``: the packed weight's block (default: read off ``acc``'s second
    operand, 1 if it does not divide N). A zero-padded weight's ``acc`` has every packed
    column, ``[M, ceil(N/nb)*nb]``, and ``out`` the first N: only the stores of the last
    column panel are guarded.

    * ``"tiles"``: the (row tile, column block) pairs in parallel, row tile outer: each
      row tile sweeps every packed column panel of B;
    * ``"rows"``: only the row tiles (each thread sweeps all column blocks of its rows);
    * ``"panels"``: the (column panel, row tile) pairs, panel outer (GotoBLAS/BLIS's
      loop order, Goto & van de Geijn, "Anatomy of high-performance matrix
      multiplication", TOMS 2008): consecutive tiles reuse one ``K x nb`` panel of the
      packed B (K=1024, nb=64: 256 KiB, inside Zen 4's 1 MiB L2 per core) while each
      ``mr x K`` strip of A (16 KiB at mr=4) streams through L1.

    With fewer than :data:`MIN_PARALLEL_PANELS` row tiles ``"rows"`` runs as ``"tiles"`` (the
    same loop order, with the column blocks in parallel too): a matrix-vector product has
    one row tile, which ``"rows"`` would run on one thread (MobileNetV2's 1280 -> 1000
    classifier, tuned to ``"rows"`` at 1 thread, took as long at 2 threads: 425 vs 414 us).

    Where the last row tile is partial (:func:`_partial_rows`) no order fuses the row loop:
    ``"panels"`` runs the panels in parallel and each panel's row tiles in one loop (at
    least :data:`MIN_PARALLEL_PANELS` panels), ``"tiles"`` and fewer panels run as
    ``"rows"``.

    Raises:
        ValueError: ``par`` is not one of :data:`DENSE_PAR`.
    """
    if par not in DENSE_PAR:
        raise ValueError(f"dense par must be one of {DENSE_PAR}, not {par!r}")
    M, N = out.shape
    if nb is None:
        nb = acc.op.reads()[1].shape[-1] if len(acc.op.reads()) > 1 else 16
        nb = nb if N % nb == 0 else 1
    if out is acc:
        acc = s.cache_write(acc, "local")
    m_tile = _row_tile(M, mr)
    if par == "rows" and -(-M // m_tile) < MIN_PARALLEL_PANELS:
        par = "tiles"
    i, j = s[out].op.axis
    io, ii = s[out].split(i, factor=m_tile)
    jo, ji = s[out].split(j, factor=nb)
    if _partial_rows(M, m_tile) and par != "rows":
        par = "panels" if par == "panels" and -(-N // nb) >= MIN_PARALLEL_PANELS else "rows"
        outer, inner = (jo, io) if par == "panels" else (io, jo)
        s[out].reorder(outer, inner, ii, ji)
        s[out].parallel(outer)
        s[acc].compute_at(s[out], inner)
    elif par in ("tiles", "panels"):
        s[out].reorder(*((jo, io) if par == "panels" else (io, jo)), ii, ji)
        fused = s[out].fuse(*((jo, io) if par == "panels" else (io, jo)))
        s[out].parallel(fused)
        s[acc].compute_at(s[out], fused)
    else:
        s[out].reorder(io, jo, ii, ji)
        s[out].parallel(io)
        s[acc].compute_at(s[out], jo)
    s[out].unroll(ii)
    s[out].vectorize(ji)
    ai, aj = s[acc].op.axis
    (k,) = s[acc].op.reduce_axis
    s[acc].reorder(k, ai, aj)
    s[acc].unroll(ai)
    s[acc].vectorize(aj)
    return s


#: name prefix of the stage that packs B at run time (:func:`pack_batch_b`)
BPACK = "bpack"


def pack_batch_b(b_fn, shape, nb: int, name: str = BPACK):
    """The run-time packing of an activation B: ``bp[B, ceil(N/nb), K, nb] =
    b(bb, k, jo*nb + ji)``, zero past column N.

    ``b_fn(bb, k, j)`` reads B[B, K, N] (``shape``); the packed copy lets the micro-kernel
    read ``nb`` columns contiguously at every k, as the dense weight packed at compile time.

    Raises:
        ValueError: a stage name that does not start with :data:`BPACK` (the schedule
            finds the packing by it).
    """
    from compiler.tir import ir
    B, K, N = shape
    if not name.startswith(BPACK):
        raise ValueError(f"pack_batch_b: the stage name must start with {BPACK!r}, not {name!r}")
    zero = ir.const(0.0, "float32")

    def f(bb, jo, k, ji):
        if N % nb == 0:
            return b_fn(bb, k, jo * nb + ji)
        return te.if_then_else(jo * nb + ji < N, b_fn(bb, k, jo * nb + ji), zero)
    return te.compute((B, -(-N // nb), K, nb), f, name=name)


def batch_matmul_packed(a_fn, bp, M: int, name="matmul"):
    """``a(bb, i, k)`` of ``[B, M, K]`` times the packed ``bp[B, ceil(N/nb), K, nb]``
    (:func:`pack_batch_b`) -> ``out[B, M, ceil(N/nb)*nb]`` (every packed column, so no
    register tile has a tail; the consumer reads the first N), float32 accumulation."""
    B, Nb, K, nb = bp.shape
    k = te.reduce_axis(K, "k")
    return te.compute((B, M, Nb * nb),
                      lambda bb, i, j: te.sum(a_fn(bb, i, k) * bp[bb, j // nb, k, j % nb], axis=k),
                      name=name)


def _packed_b(acc):
    return next((t for t in acc.op.reads() if t.op.name.startswith(BPACK)), None)


def schedule_batch_matmul(s, acc, out, mr: int = 4, nb: int = 16):
    """Schedule :func:`batch_matmul` or :func:`batch_matmul_packed` (``acc``) with its
    epilogue ``out[B, M, N]`` (may be ``acc``): ``mr x nb`` register tiles (caps: rows as
    :func:`_row_tile`, columns a divisor of N at most nb; a packed B fixes nb to its panel
    width). Unpacked: (batch, row
    tile) in parallel. Packed: the packing runs in parallel over (batch, panel), then the
    tiles in panel order (see :func:`schedule_dense`'s ``"panels"``); with a partial row
    tile, at least :data:`MIN_PARALLEL_PANELS` (batch, panel) pairs run in parallel, each
    one's row tiles in one loop (:func:`_partial_rows`)."""
    B, M, N = out.shape
    packed = _packed_b(acc)
    if out is acc:
        acc = s.cache_write(acc, "local")
    m_tile = _row_tile(M, mr)
    n_tile = packed.shape[-1] if packed is not None else _divisor_at_most(N, nb)
    b, i, j = s[out].op.axis
    io, ii = s[out].split(i, factor=m_tile)
    jo, ji = s[out].split(j, factor=n_tile)
    if packed is None:
        s[out].reorder(b, io, jo, ii, ji)
        s[out].parallel(s[out].fuse(b, io))
        tile = jo
    elif _partial_rows(M, m_tile) and B * packed.shape[1] >= MIN_PARALLEL_PANELS:
        s[out].reorder(b, jo, io, ii, ji)        # panels in parallel, the partial tile peeled
        s[out].parallel(s[out].fuse(b, jo))
        tile = io
    else:
        s[out].reorder(b, jo, io, ii, ji)
        tile = s[out].fuse(b, jo, io)
        s[out].parallel(tile)
    if packed is not None:
        pb, pj, _, pi = s[packed].op.axis
        s[packed].parallel(s[packed].fuse(pb, pj))
        s[packed].vectorize(pi)
    s[out].unroll(ii)
    s[out].vectorize(ji)
    s[acc].compute_at(s[out], tile)
    ab, ai, aj = s[acc].op.axis
    (k,) = s[acc].op.reduce_axis
    s[acc].reorder(k, ab, ai, aj)
    s[acc].unroll(ai)
    s[acc].vectorize(aj)
    return s
