"""
Matrix multiply blocking, with virtual threads
==============================================

A 64 x 256 x 256 int8 GEMM (VTA's "Matrix Multiply Blocking" tutorial, at a
size the default accelerator holds), scheduled three ways and timed on the
cycle-accurate simulator:

1. unblocked: load everything, multiply, store: the loads, the GEMMs and the
   store run one after the other;
2. blocked: output channels in tiles of ``o_block`` blocks, the reduction in
   steps of ``i_block`` blocks, the weights loaded tile by tile;
3. blocked with two virtual threads: the tiles alternate between two copies of
   the on-chip buffers, so one thread's weight loads and stores overlap the
   other's GEMMs (the dependency tokens between the load, compute and store
   modules let them run at once).

Run it with ``python tutorials/matrix_multiply_blocking.py`` (about a second).
"""
# %%
import os

import numpy as np

import compiler
import driver
from compiler import te
from compiler.topi.vta import Env, pack_matrix, unpack_matrix

env = Env.from_config("1x16_i8w8a32_15_15_18_17")
M, K, N = 64, 256, 256

# %%
# The GEMM in tiles
# -----------------
# ``A`` is ``(M/BATCH, K/BLOCK_IN, BATCH, BLOCK_IN)``, ``B`` ``(N/BLOCK_OUT,
# K/BLOCK_IN, BLOCK_OUT, BLOCK_IN)``; ``C_buf`` is the int32 accumulator and
# ``C`` its int8 truncation. With ``requantize`` (the last section), as in VTA's
# tutorial, three elementwise stages on the ALU come in between: a shift right
# by ``INP_WIDTH`` bits, relu (max 0) and the int8 maximum (min 127).


def declare(requantize: bool = False):
    o, n, m = M // env.BATCH, K // env.BLOCK_IN, N // env.BLOCK_OUT
    A = te.placeholder((o, n, env.BATCH, env.BLOCK_IN), env.inp_dtype, name="A")
    B = te.placeholder((m, n, env.BLOCK_OUT, env.BLOCK_IN), env.wgt_dtype, name="B")
    A_buf = te.compute(A.shape, lambda *i: A[i], name="A_buf")
    B_buf = te.compute(B.shape, lambda *i: B[i], name="B_buf")
    ko = te.reduce_axis(n, name="ko")
    ki = te.reduce_axis(env.BLOCK_IN, name="ki")
    C_buf = te.compute(
        (o, m, env.BATCH, env.BLOCK_OUT),
        lambda bo, co, bi, ci: te.sum(te.cast(A_buf[bo, ko, bi, ki], env.acc_dtype)
                                      * te.cast(B_buf[co, ko, ci, ki], env.acc_dtype),
                                      axis=[ko, ki]),
        name="C_buf")
    if not requantize:
        C = te.compute(C_buf.shape, lambda *i: te.cast(C_buf[i], env.inp_dtype), name="C")
        return A, B, A_buf, B_buf, C_buf, (), C
    inp_max = (1 << (env.INP_WIDTH - 1)) - 1
    C_shr = te.compute(C_buf.shape, lambda *i: C_buf[i] >> env.INP_WIDTH, name="C_shr")
    C_max = te.compute(C_buf.shape, lambda *i: te.maximum(C_shr[i], 0), name="C_max")
    C_min = te.compute(C_buf.shape, lambda *i: te.minimum(C_max[i], inp_max), name="C_min")
    C = te.compute(C_buf.shape, lambda *i: te.cast(C_min[i], env.inp_dtype), name="C")
    return A, B, A_buf, B_buf, C_buf, (C_shr, C_max, C_min), C


# %%
# The schedule
# ------------
# ``o_block`` output-channel blocks per tile and ``i_block`` input-channel
# blocks per reduction step; ``o_block = N/BLOCK_OUT``, ``i_block = K/BLOCK_IN``
# is the unblocked schedule. With ``vthreads`` the tiles are split over virtual
# threads (``bind`` to a ``"cthread"`` axis, as VTA names it). The input ``A``
# (small) is loaded once, at the root; the weights tile by tile, at the
# reduction step ``ic_out``. The GEMM and the ALU stages are computed at the
# output tile; the code generator folds each tile's GEMM loops into one GEMM
# instruction, and ``env.alu`` turns each ALU stage into ALU instructions (its
# body pattern-matched: a shift, a max, a min).


def schedule(o_block: int, i_block: int, vthreads: int = 1, requantize: bool = False):
    A, B, A_buf, B_buf, C_buf, alu_stages, C = declare(requantize)
    s = te.create_schedule(C)
    s[A_buf].set_scope(env.inp_scope)
    s[B_buf].set_scope(env.wgt_scope)
    for stage in (C_buf, *alu_stages):
        s[stage].set_scope(env.acc_scope)
    b, oc, b_tns, oc_tns = s[C].op.axis
    oc_out, oc_inn = s[C].split(oc, factor=o_block)
    if vthreads > 1:
        tx, oc_out = s[C].split(oc_out, nparts=vthreads)
        s[C].reorder(tx, oc_out, b, oc_inn, b_tns, oc_tns)
        s[C].bind(tx, te.thread_axis("cthread"))
    else:
        s[C].reorder(oc_out, b, oc_inn, b_tns, oc_tns)
    for stage in (C_buf, *alu_stages):
        s[stage].compute_at(s[C], oc_out)
    bo, co, bi, ci = s[C_buf].op.axis
    ko, ki = s[C_buf].op.reduce_axis
    ic_out, ic_inn = s[C_buf].split(ko, factor=i_block)
    s[C_buf].reorder(ic_out, bo, co, ic_inn, bi, ci, ki)
    s[B_buf].compute_at(s[C_buf], ic_out)
    s[A_buf].pragma(s[A_buf].op.axis[0], env.dma_copy)
    s[B_buf].pragma(s[B_buf].op.axis[0], env.dma_copy)
    s[C].pragma(b, env.dma_copy)
    s[C_buf].tensorize(bi, env.gemm)
    for stage in alu_stages:
        s[stage].pragma(s[stage].op.axis[0], env.alu)
    return s, [A, B, C]


# %%
# Build, run, compare
# -------------------
rng = np.random.default_rng(0)
a = rng.integers(-128, 128, (M, K), dtype=np.int8)
b = rng.integers(-128, 128, (N, K), dtype=np.int8)
want = (a.astype(np.int32) @ b.T.astype(np.int32)).astype(np.int8)
inputs = {"A": pack_matrix(a, env.BATCH, env.BLOCK_IN), "B": pack_matrix(b, env.BLOCK_OUT, env.BLOCK_IN)}
m_blocks, k_blocks = N // env.BLOCK_OUT, K // env.BLOCK_IN

results = {}
for label, o_block, i_block, vt in [("unblocked", m_blocks, k_blocks, 1),
                                    ("blocked", m_blocks // 4, k_blocks // 2, 1),
                                    ("blocked, 2 virtual threads", m_blocks // 2, k_blocks // 2, 2)]:
    s, args = schedule(o_block, i_block, vt)
    kernel = compiler.build(s, args, target="vta", config=env.cfg, name="matmul")
    r = driver.run_kernel(kernel, inputs)
    np.testing.assert_array_equal(unpack_matrix(r["C"]), want)
    results[label] = r
    print(f"{M}x{K}x{N} {label:28} o_block {o_block:2} i_block {i_block:2}: {r.summary()}")

# %%
# With two virtual threads the weight loads and the stores of one thread hide
# behind the other's GEMMs: the GEMM unit is busy at least 60 % of the time (its
# peak: BATCH x BLOCK_IN x BLOCK_OUT = 256 MACs per cycle), against about 54 %
# unblocked, where nothing overlaps.
best = results["blocked, 2 virtual threads"]
assert best.cycles < min(results["blocked"].cycles, results["unblocked"].cycles)
assert best.gemm_utilization >= 0.60, best.summary()

# %%
# The timeline
# ------------
# ``trace=True`` keeps the run's timeline; ``write_chrome`` writes it for
# Perfetto (https://ui.perfetto.dev): one track per module (fetch, load,
# compute, store) and one for the memory port, and an arrow per dependency token.
s, args = schedule(m_blocks // 2, k_blocks // 2, 2)
r = driver.run_kernel(compiler.build(s, args, target="vta", config=env.cfg), inputs, trace=True)
os.makedirs("out", exist_ok=True)
r.trace.write_chrome("out/matmul_vthreads.trace.json")
print("wrote out/matmul_vthreads.trace.json: open it in https://ui.perfetto.dev")

# %%
# Requantizing on the ALU
# -----------------------
# VTA's tutorial ends its GEMM with a shift, a relu and a clip to int8, each an
# elementwise stage marked ``env.alu``. The ALU shares the compute module with
# the GEMM unit: each op passes once over the tile's accumulators, so the
# utilization drops by about their share of the compute time.
s, args = schedule(m_blocks // 2, k_blocks // 2, 2, requantize=True)
kernel = compiler.build(s, args, target="vta", config=env.cfg, name="matmul_requantized")
print(kernel.describe())
r = driver.run_kernel(kernel, inputs)
want_q = np.clip((a.astype(np.int32) @ b.T.astype(np.int32)) >> env.INP_WIDTH, 0, 127)
got = unpack_matrix(r["C"])
np.testing.assert_array_equal(got, want_q)
assert kernel.stats.insns["ALU"] == 3 * 2      # shift, max, min per output tile, two tiles
print(f"{M}x{K}x{N} requantized, 2 virtual threads: {r.summary()}")
err = max(np.abs(g.astype(np.int64) - w).max() for g, w in
          [(unpack_matrix(x["C"]), want) for x in results.values()] + [(got, want_q)])
print(f"all {len(results) + 1} schedules match numpy (max abs error {err})")
