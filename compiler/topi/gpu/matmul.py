"""Tiled GEMM for GPUs: C[M, N] = A[M, K] @ B[K, N], row-major, fp32 accumulation.

The kernel is built directly as a tir PrimFunc with the tir node constructors
(`compiler.te` did not yet offer bind + cache_read(shared/local) + compute_at
when this was written); it is the loop nest such a schedule lowers to:

    for by in M/BM  (blockIdx.y)     for bx in N/BN  (blockIdx.x)
    for ty in BM/TM (threadIdx.y)    for tx in BN/TN (threadIdx.x)
      C_local[TM*TN] = 0                                  # register tile ("local")
      [prefetch] A_ld, B_ld <- first K-slice              # global -> registers
      for ko in K/BK:
        A_sh[BK][BM] <- A tile (transposed), B_sh[BK][BN] <- B tile   # "shared"
        [prefetch] if ko+1 < K/BK: A_ld, B_ld <- next K-slice (in flight during compute)
        for k in BK (unrolled):
          A_reg[TM] <- A_sh[k][...] ; B_reg[TN] <- B_sh[k][...]          # float4 shared loads
          C_local[i][j] += A_reg[i] * B_reg[j]                           # TM x TN FMAs
      C[...] <- C_local                                                  # float4 stores

Each thread's TM x TN tile is split into groups of `vector` rows/columns spaced
BM/(TM/vector) apart, so that a warp's float4 shared-memory loads hit distinct
banks. Barriers are not written here: `codegen.gpu_barriers` places them (one
before the compute of each K-slice, one before the shared tiles are
overwritten).

fp16: A and B may be float16 (storage); they are converted to float32 on the
way to shared memory and everything after is float32 (fp32 accumulation).
Global loads of float16 tiles are scalar (float16 is a storage type in
`c_source`).
"""

from __future__ import annotations

from ...tir import ir
from ...tir.simplify import simplify
from ...tir.ops import ForKind

SERIAL, UNROLL = ForKind.SERIAL, ForKind.UNROLLED


def _for(v, extent, body, kind=SERIAL, thread=None):
    return ir.For(v, ir.const(0), ir.const(extent), kind, body, thread)


def _vec_load(buf, base, lanes):
    return ir.load(buf, [ir.ramp(base, 1, lanes)], lanes) if lanes > 1 else ir.load(buf, [base])


def _vec_store(buf, base, value, lanes):
    return ir.Store(buf, value, (ir.ramp(base, 1, lanes) if lanes > 1 else base,))


def matmul(M: int, N: int, K: int, dtype: str = "float32", *, block_m: int = 128,
           block_n: int = 128, block_k: int = 8, thread_m: int = 8, thread_n: int = 8,
           vector: int = 4, prefetch: bool = True, name: str | None = None) -> ir.PrimFunc:
    """The GEMM kernel as a PrimFunc with params (A, B, C): A [M, K] and B [K, N] of `dtype`
    ("float32" or "float16"), C [M, N] float32.

    Tiles (elements): block_m x block_n per block, block_k of K per step, thread_m x thread_n
    per thread; (block_m/thread_m) x (block_n/thread_n) threads per block. `vector` is the
    width of vector loads (float4 = 4). Raises ValueError when a size does not divide.
    """
    if dtype not in ("float32", "float16"):
        raise ValueError(f"dtype must be 'float32' or 'float16', not {dtype!r}")
    for what, a, b in (("M", M, block_m), ("N", N, block_n), ("K", K, block_k),
                       ("block_m", block_m, thread_m), ("block_n", block_n, thread_n),
                       ("thread_m", thread_m, vector), ("thread_n", thread_n, vector)):
        if a % b:
            raise ValueError(f"{what}={a} must be a multiple of {b}; pad the operands or pick "
                             "tile sizes that divide the shape")
    ty_n, tx_n = block_m // thread_m, block_n // thread_n
    threads = ty_n * tx_n
    gvec = vector if dtype == "float32" else 1          # global-load width
    a_vecs, b_vecs = block_m * block_k // min(gvec, block_k), block_k * block_n // gvec
    va = min(gvec, block_k)
    if a_vecs % threads or b_vecs % threads or block_k % va:
        raise ValueError(f"the {block_m}x{block_k} A tile and {block_k}x{block_n} B tile must load "
                         f"evenly with {threads} threads in vectors of {gvec}")
    pa, pb = a_vecs // threads, b_vecs // threads
    name = name or f"matmul_{dtype}_{M}x{N}x{K}"

    A = ir.Buffer("A", dtype, (M, K))
    B = ir.Buffer("B", dtype, (K, N))
    C = ir.Buffer("C", "float32", (M, N))
    A_sh = ir.Buffer("A_shared", "float32", (block_k, block_m), scope="shared")
    B_sh = ir.Buffer("B_shared", "float32", (block_k, block_n), scope="shared")
    C_loc = ir.Buffer("C_local", "float32", (thread_m, thread_n), scope="local")
    A_reg = ir.Buffer("A_reg", "float32", (thread_m,), scope="local")
    B_reg = ir.Buffer("B_reg", "float32", (thread_n,), scope="local")
    A_ld = ir.Buffer("A_ld", dtype, (pa, va), scope="local")
    B_ld = ir.Buffer("B_ld", dtype, (pb, gvec), scope="local")

    by, bx, ty, tx = ir.var("by"), ir.var("bx"), ir.var("ty"), ir.var("tx")
    ko, k, i, j = ir.var("ko"), ir.var("k"), ir.var("i"), ir.var("j")
    io, ii, jo = ir.var("io"), ir.var("ii"), ir.var("jo")
    tid = ty * tx_n + tx
    a_per_row = block_k // va            # vectors per A-tile row
    b_per_row = block_n // gvec          # vectors per B-tile row

    def a_row_col(pi):                   # tile coordinates of A vector number tid + threads*pi
        lin = tid + threads * pi
        return lin // a_per_row, (lin % a_per_row) * va

    def b_row_col(pi):
        lin = tid + threads * pi
        return lin // b_per_row, (lin % b_per_row) * gvec

    count = [0]

    def fresh(base):
        count[0] += 1
        return ir.var(f"{base}{count[0]}")

    def global_to_regs(kslice):
        p = fresh("p")
        ra, ca = a_row_col(p)
        rb, cb = b_row_col(p)
        ld_a = _vec_store(A_ld, p * va, _vec_load(A, (by * block_m + ra) * K + kslice * block_k + ca, va), va)
        q = fresh("p")
        rb, cb = b_row_col(q)
        ld_b = _vec_store(B_ld, q * gvec, _vec_load(B, (kslice * block_k + rb) * N + bx * block_n + cb, gvec), gvec)
        return ir.seq(_for(p, pa, ld_a, UNROLL), _for(q, pb, ld_b, UNROLL))

    def regs_to_shared():
        p, q, v = fresh("p"), fresh("p"), fresh("v")
        ra, ca = a_row_col(p)
        rb, cb = b_row_col(q)
        st_a = _for(v, va, ir.Store(A_sh, ir.cast(ir.load(A_ld, [p * va + v]), "float32"),
                                    ((ca + v) * block_m + ra,)), UNROLL)
        if gvec > 1:
            st_b = _vec_store(B_sh, rb * block_n + cb, _vec_load(B_ld, q * gvec, gvec), gvec)
        else:
            st_b = ir.Store(B_sh, ir.cast(ir.load(B_ld, [q]), "float32"), (rb * block_n + cb,))
        return ir.seq(_for(p, pa, st_a, UNROLL), _for(q, pb, st_b, UNROLL))

    rm, rn = block_m // (thread_m // vector), block_n // (thread_n // vector)   # group spacing
    g, h = ir.var("g"), ir.var("h")
    compute = _for(k, block_k, ir.seq(
        _for(g, thread_m // vector, _vec_store(A_reg, g * vector, _vec_load(
            A_sh, k * block_m + g * rm + ty * vector, vector), vector), UNROLL),
        _for(h, thread_n // vector, _vec_store(B_reg, h * vector, _vec_load(
            B_sh, k * block_n + h * rn + tx * vector, vector), vector), UNROLL),
        _for(i, thread_m, _for(j, thread_n, ir.Store(
            C_loc, ir.load(C_loc, [i * thread_n + j]) + ir.load(A_reg, [i]) * ir.load(B_reg, [j]),
            (i * thread_n + j,)), UNROLL), UNROLL)), UNROLL)

    ksteps = K // block_k
    if prefetch:
        step = ir.seq(regs_to_shared(),
                      ir.IfThenElse(ko + 1 < ksteps, global_to_regs(ko + 1)),
                      compute)
        main = ir.seq(global_to_regs(ir.const(0)), _for(ko, ksteps, step))
    else:
        main = _for(ko, ksteps, ir.seq(global_to_regs(ko), regs_to_shared(), compute))

    i0 = ir.var("i0")
    init = _for(i0, thread_m * thread_n, ir.Store(C_loc, ir.const(0.0), (i0,)), UNROLL)
    row = by * block_m + io * rm + ty * vector + ii
    write = _for(io, thread_m // vector, _for(ii, vector, _for(jo, thread_n // vector, _vec_store(
        C, row * N + bx * block_n + jo * rn + tx * vector,
        _vec_load(C_loc, ((io * vector + ii) * thread_n + jo * vector), vector), vector),
        UNROLL), UNROLL), UNROLL)

    body = ir.seq(init, main, write)
    for buf in (A_ld, B_ld, B_reg, A_reg, C_loc, B_sh, A_sh):
        body = ir.Allocate(buf, body)
    body = _for(tx, tx_n, body, thread="threadIdx.x")
    body = _for(ty, ty_n, body, thread="threadIdx.y")
    body = _for(bx, N // block_n, body, thread="blockIdx.x")
    body = _for(by, M // block_m, body, thread="blockIdx.y")
    return simplify(ir.PrimFunc(name, (A, B, C), body))


def flops(M: int, N: int, K: int) -> int:
    """Floating-point operations of one GEMM (a multiply and an add per MAC)."""
    return 2 * M * N * K


def matmul_naive(M: int, N: int, K: int, block: int = 16, name: str | None = None) -> ir.PrimFunc:
    """The untiled reference GEMM: one thread per C element, a serial K loop from global memory.

    params (A [M, K], B [K, N], C [M, N]), all float32; raises ValueError unless `block`
    divides M and N. The baseline the benchmark reports when torch/cuBLAS is absent.
    """
    if M % block or N % block:
        raise ValueError(f"M={M} and N={N} must be multiples of block={block}")
    A = ir.Buffer("A", "float32", (M, K))
    B = ir.Buffer("B", "float32", (K, N))
    C = ir.Buffer("C", "float32", (M, N))
    acc = ir.Buffer("acc", "float32", (1,), scope="local")
    by, bx, ty, tx, k = (ir.var(n) for n in ("by", "bx", "ty", "tx", "k"))
    row, col = by * block + ty, bx * block + tx
    zero = ir.const(0)
    body = ir.Allocate(acc, ir.seq(
        ir.Store(acc, ir.const(0.0), (zero,)),
        _for(k, K, ir.Store(acc, ir.load(acc, [zero]) + ir.load(A, [row * K + k]) * ir.load(B, [k * N + col]),
                            (zero,))),
        ir.Store(C, ir.load(acc, [zero]), (row * N + col,))))
    body = _for(tx, block, body, thread="threadIdx.x")
    body = _for(ty, block, body, thread="threadIdx.y")
    body = _for(bx, N // block, body, thread="blockIdx.x")
    body = _for(by, M // block, body, thread="blockIdx.y")
    return simplify(ir.PrimFunc(name or f"matmul_naive_{M}x{N}x{K}", (A, B, C), body))
