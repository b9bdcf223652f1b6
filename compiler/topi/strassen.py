"""Fast matrix products: Strassen-like bilinear algorithms over a packed-GEMM leaf.

``C[M, N] = A[M, K] @ B[K, N]`` with A, B and C cut into a ``g x g`` grid of blocks
(``g = 2**levels``) and computed from ``7**levels`` block products instead of ``8**levels``:

    P_p = (sum_q U[p, q] A_q) @ (sum_q V[p, q] B_q),     C_r = sum_p W[r, p] P_p

(``q``, ``r``: blocks in row-major order). One level is a table ``(U, V, W)`` of
:data:`ALGORITHMS`; ``levels`` levels are its Kronecker powers (the recursion unrolled into
one level on the finer grid, as in Huang, Smith, Henry, van de Geijn, "Strassen's
algorithm reloaded", SC16, section 3).

Where the additions go (fused, as in "reloaded", where that pays on Zen 1):

* B's sums: into B's packing, at compile time for a constant
  (:func:`pack_strassen_weight`) or as the kernel's packing stage for an activation
  (:func:`pack_strassen_b`), ``[P, N/g/nb, K/g, nb]``;
* A's sums: one vectorised pass writing the ``P`` left operands. Summed inside the
  GEMM's inner loop instead, each row and k costs a scalar add and a register broadcast
  where the plain GEMM has one broadcast load: a two-term 512^3 leaf took 9.4 ms of CPU
  time against 7.5 ms (one Zen 1 core, 2 x 32 tile), more than the pass costs;
* C's sums: one pass that writes each block of C once from the products naming it.

Every value stays float32 (products accumulate in float32, as the plain GEMM). The
classic table has the fewest non-zero coefficients (12 in each of U, V, W; Winograd's
variant saves additions only where partial sums are stored and reused, here it has
14, 14 and 14 non-zeros, so it reads more). Rounding grows with the levels (Higham,
"Accuracy and Stability of Numerical Algorithms", 2nd ed., ch. 23): 1024^3 of standard
normal values, two levels, 2.3e-6 of max|C| against the GEMM's 1.2e-6.
"""
from __future__ import annotations

from functools import reduce

import numpy as np

from compiler import te
from compiler.tir import ir
from compiler.topi.dense import _row_tile

#: algorithm -> (U[7, 4], V[7, 4], W[4, 7]) for one level, blocks 11, 12, 21, 22.
#: "strassen": Strassen, "Gaussian elimination is not optimal", Numer. Math. 13 (1969);
#: "winograd": Winograd's 7-multiplication 15-addition variant (S. Winograd 1971, in the
#: form of Boyer, Dumas, Pernet, Zhou, ISSAC 2009, algorithm 1).
ALGORITHMS: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {
    "strassen": (
        np.array([[1, 0, 0, 1], [0, 0, 1, 1], [1, 0, 0, 0], [0, 0, 0, 1],
                  [1, 1, 0, 0], [-1, 0, 1, 0], [0, 1, 0, -1]]),
        np.array([[1, 0, 0, 1], [1, 0, 0, 0], [0, 1, 0, -1], [-1, 0, 1, 0],
                  [0, 0, 0, 1], [1, 1, 0, 0], [0, 0, 1, 1]]),
        np.array([[1, 0, 0, 1, -1, 0, 1], [0, 0, 1, 0, 1, 0, 0],
                  [0, 1, 0, 1, 0, 0, 0], [1, -1, 1, 0, 0, 1, 0]])),
    # P1 = A11 B11, P2 = A12 B21, P3 = S4 B22, P4 = A22 T4, P5 = S1 T1, P6 = S2 T2,
    # P7 = S3 T3 with S1 = A21 + A22, S2 = S1 - A11, S3 = A11 - A21, S4 = A12 - S2,
    # T1 = B12 - B11, T2 = B22 - T1, T3 = B22 - B12, T4 = T2 - B21
    "winograd": (
        np.array([[1, 0, 0, 0], [0, 1, 0, 0], [1, 1, -1, -1], [0, 0, 0, 1],
                  [0, 0, 1, 1], [-1, 0, 1, 1], [1, 0, -1, 0]]),
        np.array([[1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1], [1, -1, -1, 1],
                  [-1, 1, 0, 0], [1, -1, 0, 1], [0, -1, 0, 1]]),
        np.array([[1, 1, 0, 0, 0, 0, 0], [1, 0, 1, 0, 1, 1, 0],
                  [1, 0, 0, -1, 0, 1, 1], [1, 0, 0, 0, 1, 1, 1]])),
}


def _reorder_blocks(m: np.ndarray, levels: int) -> np.ndarray:
    """Columns of a Kronecker power indexed (r1, c1, r2, c2, ...) -> row-major blocks of the
    ``2**levels`` grid (row r1 r2 ..., column c1 c2 ... in binary)."""
    lead = m.shape[:-1]
    t = m.reshape(lead + (2, 2) * levels)
    rows = [len(lead) + 2 * i for i in range(levels)]
    cols = [len(lead) + 2 * i + 1 for i in range(levels)]
    return t.transpose(tuple(range(len(lead))) + tuple(rows) + tuple(cols)).reshape(m.shape)


def coefficients(algorithm: str, levels: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(U[P, g*g], V[P, g*g], W[g*g, P]) int arrays for ``levels`` levels, ``P = 7**levels``,
    ``g = 2**levels``; blocks row-major on the ``g x g`` grid.

    Raises:
        ValueError: an unknown ``algorithm`` or ``levels`` under 1.
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"fast matmul algorithm must be one of {sorted(ALGORITHMS)}, "
                         f"not {algorithm!r}")
    if levels < 1:
        raise ValueError(f"fast matmul levels must be >= 1, not {levels!r}")
    U, V, W = (reduce(np.kron, [m] * levels) for m in ALGORITHMS[algorithm])
    return _reorder_blocks(U, levels), _reorder_blocks(V, levels), \
        _reorder_blocks(W.T, levels).T


def _blocks(x: np.ndarray, g: int) -> list:
    R, C = x.shape
    h, w = R // g, C // g
    return [x[r * h:(r + 1) * h, c * w:(c + 1) * w] for r in range(g) for c in range(g)]


def _check_b(who: str, shape, levels: int, nb: int) -> int:
    """The grid side ``g = 2**levels``; ValueError where ``B[K, N]`` does not fit it."""
    K, N = shape
    g = 2 ** levels
    if K % g or N % (g * nb):
        raise ValueError(f"{who}: B[{K}, {N}] must have K a multiple of {g} and N of {g * nb} "
                         f"({levels} levels, block {nb}); use the plain GEMM")
    return g


def pack_strassen_weight(b: np.ndarray, algorithm: str, levels: int, nb: int) -> np.ndarray:
    """numpy, compile time: ``b[K, N]`` float32 -> the ``P = 7**levels`` right operands
    ``sum_q V[p, q] B_q`` (``[K/g, N/g]`` each, summed in float32 in the order of
    :func:`pack_strassen_b`, so both give the same bits), each packed as the
    plain GEMM's weight: ``[P, N/g/nb, K/g, nb]``.

    Raises:
        ValueError: K or N not a multiple of ``g = 2**levels`` (and N/g of ``nb``).
    """
    K, N = b.shape
    g = _check_b("pack_strassen_weight", b.shape, levels, nb)
    _, V, _ = coefficients(algorithm, levels)
    blocks = _blocks(np.asarray(b, np.float32), g)
    out = []
    for row in V:                      # summed in the kernel's order (pack_strassen_b)
        t = _signed_sum((int(row[q]), blocks[q]) for q in np.nonzero(row)[0])
        out.append(t.T.reshape(-1, nb, K // g).transpose(0, 2, 1))
    return np.ascontiguousarray(np.stack(out))


def strassen_weight_shape(shape: tuple, levels: int, nb: int) -> tuple:
    """Shape of :func:`pack_strassen_weight`'s result for ``B`` of ``shape`` ``(K, N)``."""
    K, N = shape
    g = 2 ** levels
    return (7 ** levels, N // g // nb, K // g, nb)


def pack_strassen_b(b_fn, shape, algorithm: str, levels: int, nb: int, name: str = "strassen_b"):
    """Run time (B an activation): :func:`pack_strassen_weight` as a stage, ``b_fn(k, n)``
    reading ``B[K, N]`` (``shape``) -> ``[P, N/g/nb, K/g, nb]``: the additions fused into
    the packing ("Strassen's algorithm reloaded"'s packing with sums), float32.

    Raises:
        ValueError: K or N not a multiple of ``g`` (and N/g of ``nb``).
    """
    K, N = shape
    g = _check_b("pack_strassen_b", shape, levels, nb)
    _, V, _ = coefficients(algorithm, levels)
    Kh, w = K // g, N // g

    def f(p, jo, k, ji):
        j = jo * nb + ji
        return _by_index(p, [_signed_sum((int(V[c, q]), b_fn(k + (q // g) * Kh, j + (q % g) * w))
                                         for q in map(int, np.nonzero(V[c])[0]))
                             for c in range(len(V))])
    return te.compute(strassen_weight_shape(shape, levels, nb), f, name=name)


def _signed_sum(terms):
    """sum of ``(sign, expr)`` with +/- instead of multiplications by +-1, a positive term
    first where there is one."""
    terms = sorted(terms, key=lambda t: t[0] < 0)
    out = None
    for sign, e in terms:
        out = (e if sign > 0 else -e) if out is None else (out + e if sign > 0 else out - e)
    return out


def _by_index(idx, exprs):
    """``exprs[idx]`` as a chain of ``ir.select`` on ``idx == c``, which folds to one
    entry once ``idx`` is a constant (an unrolled loop)."""
    out = exprs[-1]
    for c in range(len(exprs) - 2, -1, -1):
        out = ir.select(ir.eq(idx, c), exprs[c], out)
    return out


def strassen_matmul(a_fn, shape, bp, algorithm: str, levels: int, name: str = "strassen"):
    """``a_fn(i, k)`` reads ``A[M, K]`` (``shape = (M, K)``), ``bp`` the packed right
    operands (:func:`pack_strassen_weight`) -> ``acc[M, N]``, float32.

    Three stages (``P = 7**levels``, ``g = 2**levels``, ``h = M/g``, ``w = N/g``):

    * ``{name}_s[P, h, K/g]``: the left operands ``sum_q U[p, q] A_q``;
    * ``{name}_p[P, h, w]``: the ``P`` products, one batched GEMM over ``K/g`` whose right
      operands are ``bp``'s (every product in one parallel loop);
    * ``acc``: each block of C the sum of the products ``W`` names.

    Each stage picks its product or block with ``ir.select`` chains that the schedule's
    unrolled loops fold away (:func:`schedule_strassen`).

    Raises:
        ValueError: M or K not a multiple of ``g``, or ``bp`` not ``7**levels`` operands
            of ``K/g`` rows.
    """
    M, K = shape
    P, Nb, Kh, nb = bp.shape
    g = 2 ** levels
    if M % g or K % g or P != 7 ** levels or Kh != K // g:
        raise ValueError(f"strassen_matmul: A[{M}, {K}] and packed B {bp.shape} do not fit "
                         f"{levels} levels (M, K multiples of {g}, {7 ** levels} operands of "
                         f"K/{g} rows)")
    U, _, W = coefficients(algorithm, levels)
    h, w = M // g, Nb * nb

    def left(p, i, k):
        return _by_index(p, [_signed_sum((int(U[c, q]), a_fn(i + (q // g) * h, k + (q % g) * Kh))
                                         for q in map(int, np.nonzero(U[c])[0]))
                             for c in range(P)])
    S = te.compute((P, h, Kh), left, name=f"{name}_s")
    k = te.reduce_axis(Kh, "k")
    prod = te.compute((P, h, w), lambda p, i, j: te.sum(S[p, i, k] * bp[p, j // nb, k, j % nb],
                                                         axis=k), name=f"{name}_p")

    def combine(i, j):
        ii, jj = i % h, j % w
        blocks = [_signed_sum((int(W[r, p]), prod[p, ii, jj])
                              for p in map(int, np.nonzero(W[r])[0])) for r in range(g * g)]
        return _by_index((i // h) * g + j // w, blocks)
    return te.compute((M, g * w), combine, name=name)


def schedule_strassen(s, acc, out, mr: int, nb: int, vec: int = 8):
    """Schedule :func:`strassen_matmul` (``acc``) with its epilogue stage ``out[M, N]`` (may
    be ``acc``; else ``acc`` is inlined into it). ``mr`` rows (a cap, as the plain GEMM's)
    x ``nb`` columns (the packed block) per register tile; ``vec``: lanes of the
    element-wise passes.

    Every stage is one parallel loop (one fork-join):

    * right operands packed at run time (:func:`pack_strassen_b`), if so: parallel over
      the rows of a block, the ``P`` operands unrolled, ``nb`` columns vectorised;
    * left operands: parallel over rows, the ``P`` operands unrolled (each ``select`` folds
      to its own sum), each row vectorised in ``vec``-lane pieces;
    * products: one parallel loop over (product, column panel, row tile), panel order as
      ``topi.dense.schedule_dense``'s ``"panels"``, the ``mr x nb`` accumulator tile reduced
      over ``K/g`` in registers;
    * combination: parallel over the rows of a block, the ``g x g`` blocks unrolled,
      vectorised as the left operands.
    """
    prod = acc.op.reads()[0]
    S = prod.op.reads()[0]
    P, h, w = prod.shape
    si = s[S].op.axis
    sko, ski = s[S].split(si[2], factor=vec)
    s[S].reorder(si[1], si[0], sko, ski)
    s[S].parallel(si[1])
    s[S].unroll(si[0])
    s[S].vectorize(ski)
    local = s.cache_write(prod, "local")
    p, i, j = s[prod].op.axis
    io, ii = s[prod].split(i, factor=_row_tile(h, mr))
    jo, ji = s[prod].split(j, factor=nb)
    s[prod].reorder(p, jo, io, ii, ji)
    tile = s[prod].fuse(p, jo, io)
    s[prod].parallel(tile)
    s[prod].unroll(ii)
    s[prod].vectorize(ji)
    s[local].compute_at(s[prod], tile)
    _, ai, aj = s[local].op.axis
    (k,) = s[local].op.reduce_axis
    s[local].reorder(k, ai, aj)
    s[local].unroll(ai)
    s[local].vectorize(aj)
    bp = prod.op.reads()[1]
    if isinstance(bp.op, te.ComputeOp):     # B packed at run time (pack_strassen_b)
        bpp, bjo, bk, bji = s[bp].op.axis
        s[bp].reorder(bk, bpp, bjo, bji)
        s[bp].parallel(bk)
        s[bp].unroll(bpp)
        s[bp].vectorize(bji)
    if out is not acc:
        s[acc].compute_inline()
    i, j = s[out].op.axis
    io, ii = s[out].split(i, factor=h)
    jo, ji = s[out].split(j, factor=w)
    jio, jii = s[out].split(ji, factor=vec)
    s[out].reorder(ii, io, jo, jio, jii)
    s[out].parallel(ii)
    s[out].unroll(io)
    s[out].unroll(jo)
    s[out].vectorize(jii)
    return s
