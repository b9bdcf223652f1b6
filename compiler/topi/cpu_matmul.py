"""Dense matrix multiply for CPUs: C[M, N] = A[M, K] @ B[K, N].

Compute (``matmul_packed``) and schedule (``schedule_matmul_cpu``) follow TVM's
"How to optimize GEMM on CPU" tutorial, with the register tile sized for
AVX-512 / AVX2:

* array packing: a compute stage ``B_packed[N/nb, K, nb] = B[k, jo*nb + ji]``
  so the micro-kernel reads B contiguously, ``nb`` lanes at a time;
* blocking: C is tiled into ``mr x nb`` register tiles (``tile``);
* write cache: each tile accumulates in ``C.local`` (``cache_write`` +
  ``compute_at``), which LLVM keeps in vector registers;
* loop permutation: ``ko, ki, row (unrolled), col (vectorised)`` inside a
  tile, so every step of k does ``mr`` broadcasts of A and ``mr * nb/lanes``
  FMAs against ``nb/lanes`` vector loads of B;
* parallel: the outer row-block loop (and the packing loop) run on the
  OpenMP pool.

Build with ``compiler.build(s, [A, B, C], fp_contract=True)``: without
contraction every multiply-add is two instructions and the kernel runs at
about half speed.

Shapes: A float32[M, K], B float32[K, N], C float32[M, N]; M must be a
multiple of ``mr`` and N of ``nb`` for the fastest code (other sizes are
correct, with bound guards).
"""
from __future__ import annotations

from dataclasses import dataclass

from compiler import te
from compiler.tir import ir


@dataclass(frozen=True)
class MatmulConfig:
    """Tile sizes of the CPU matmul schedule.

    Attributes:
        mr: rows of the register tile (unrolled).
        nb: columns of the register tile and of a packed B block (vectorised;
            a multiple of the SIMD width: 16 float32 lanes on AVX-512).
        kb: k split factor (the inner k loop; 1 disables the split).
    """

    mr: int = 4
    nb: int = 64
    kb: int = 4

    def __post_init__(self):
        for name in ("mr", "nb", "kb"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"MatmulConfig.{name} must be a positive int, not {v!r}")


def candidate_configs(vector_bits: int = 512) -> "list[MatmulConfig]":
    """Register tiles worth trying for a SIMD width (bits): about 24 accumulator
    registers of ``vector_bits`` out of 32 (AVX-512) or 12 of 16 (AVX2 / NEON).
    The first is the default."""
    lanes = max(4, vector_bits // 32)
    if vector_bits >= 512:
        return [MatmulConfig(6, 4 * lanes, 8), MatmulConfig(12, 2 * lanes, 4),
                MatmulConfig(4, 4 * lanes, 4), MatmulConfig(8, 2 * lanes, 4)]
    return [MatmulConfig(6, 2 * lanes, 4), MatmulConfig(4, 3 * lanes, 4),
            MatmulConfig(4, 2 * lanes, 4), MatmulConfig(8, lanes, 4)]


def matmul_packed(M: int, N: int, K: int, nb: int, dtype: str = "float32"):
    """Declare ``C = A @ B`` reading B through a packed copy ``B_packed[N/nb, K, nb]``.

    Returns:
        ``(A, B, C)``: placeholders A [M, K], B [K, N] and the output C [M, N],
        all ``dtype``.

    Raises:
        ValueError: N is not a multiple of ``nb``.
    """
    if N % nb:
        raise ValueError(f"matmul_packed: N ({N}) must be a multiple of the block width nb ({nb})")
    A = te.placeholder((M, K), dtype, "A")
    B = te.placeholder((K, N), dtype, "B")
    packed = te.compute((N // nb, K, nb), lambda jo, k, ji: B[k, jo * nb + ji], name="B_packed")
    k = te.reduce_axis((0, K), "k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * packed[j // nb, k, j % nb], axis=k),
                   name="C")
    return A, B, C


def schedule_matmul_cpu(C, config: MatmulConfig = MatmulConfig()):
    """The GEMM micro-kernel schedule for ``C`` from :func:`matmul_packed`.

    Returns:
        the ``te.Schedule``.
    """
    mr, nb, kb = config.mr, config.nb, config.kb
    s = te.create_schedule(C)
    packed = C.op.reads()[1]
    CC = s.cache_write(C, "local")

    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], mr, nb)
    s[C].vectorize(ji)
    s[C].parallel(io)

    s[CC].compute_at(s[C], jo)
    xc, yc = s[CC].op.axis
    (k,) = s[CC].op.reduce_axis
    if kb > 1:
        ko, ki = s[CC].split(k, factor=kb)
        s[CC].reorder(ko, ki, xc, yc)
    else:
        s[CC].reorder(k, xc, yc)
    s[CC].unroll(xc)
    s[CC].vectorize(yc)

    bo, bk, bi = s[packed].op.axis
    s[packed].vectorize(bi)
    s[packed].parallel(bo)
    return s
