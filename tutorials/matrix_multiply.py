"""
Simple matrix multiply
======================

One GEMM on the accelerator, written as VTA's "Simple Matrix Multiply" tutorial
teaches: declare it with tensor expressions in the packed layout, move the
operands into the accelerator's SRAMs with ``cache`` stages in its scopes, mark
the copies for DMA, tensorize the inner loops onto the GEMM intrinsic, then
build it with ``compiler.build(..., target="vta")`` and run it with
``driver.run_kernel``.

Run it with ``python tutorials/matrix_multiply.py`` from the repository root.
"""
# %%
# The environment
# ---------------
# ``Env`` carries the accelerator's parameters under TVM's names: the GEMM core
# multiplies a (BATCH x BLOCK_IN) int8 tile by a (BLOCK_OUT x BLOCK_IN) int8 tile
# into a (BATCH x BLOCK_OUT) int32 accumulator tile each cycle.
import numpy as np

import compiler
import driver
from compiler import te
from compiler.topi.vta import Env, pack_matrix, unpack_matrix

env = Env.from_config("1x16_i8w8a32_15_15_18_17")
print(f"BATCH {env.BATCH}, BLOCK_IN {env.BLOCK_IN}, BLOCK_OUT {env.BLOCK_OUT}, "
      f"dtypes {env.inp_dtype}/{env.wgt_dtype}/{env.acc_dtype}")

# %%
# The computation, in the packed layout
# -------------------------------------
# A (1 x 256) by (256 x 256)^T product: the input ``A`` is ``(o, n, BATCH,
# BLOCK_IN)`` tiles, the weights ``B`` ``(m, n, BLOCK_OUT, BLOCK_IN)``. The
# ``*_buf`` stages are copies into the accelerator's SRAMs; ``C_buf`` is the
# int32 accumulator and ``C`` its int8 truncation, stored back to DRAM.
o, n, m = 1, 16, 16
A = te.placeholder((o, n, env.BATCH, env.BLOCK_IN), env.inp_dtype, name="A")
B = te.placeholder((m, n, env.BLOCK_OUT, env.BLOCK_IN), env.wgt_dtype, name="B")
A_buf = te.compute(A.shape, lambda *i: A[i], name="A_buf")
B_buf = te.compute(B.shape, lambda *i: B[i], name="B_buf")
ko = te.reduce_axis(n, name="ko")
ki = te.reduce_axis(env.BLOCK_IN, name="ki")
C_buf = te.compute(
    (o, m, env.BATCH, env.BLOCK_OUT),
    lambda bo, co, bi, ci: te.sum(te.cast(A_buf[bo, ko, bi, ki], env.acc_dtype)
                                  * te.cast(B_buf[co, ko, ci, ki], env.acc_dtype), axis=[ko, ki]),
    name="C_buf")
C = te.compute(C_buf.shape, lambda *i: te.cast(C_buf[i], env.inp_dtype), name="C")

# %%
# The schedule
# ------------
# Scopes place each stage in an SRAM; the copies are computed at the reduction
# loop ``ko`` (one column of tiles per step); ``env.dma_copy`` turns the copy
# loops into LOAD/STORE instructions and ``env.gemm`` replaces the tile loops by
# one GEMM micro-op each.
s = te.create_schedule(C)
s[A_buf].set_scope(env.inp_scope)
s[B_buf].set_scope(env.wgt_scope)
s[C_buf].set_scope(env.acc_scope)
bo, co, bi, ci = s[C_buf].op.axis
s[C_buf].reorder(ko, bo, co, bi, ci, ki)
s[A_buf].compute_at(s[C_buf], ko)
s[B_buf].compute_at(s[C_buf], ko)
s[A_buf].pragma(s[A_buf].op.axis[0], env.dma_copy)
s[B_buf].pragma(s[B_buf].op.axis[0], env.dma_copy)
s[C].pragma(s[C].op.axis[0], env.dma_copy)
s[C_buf].tensorize(bi, env.gemm)
print(compiler.tir.lower(s, [A, B, C], "matmul"))

# %%
# Build and run
# -------------
# ``compiler.build(..., target="vta")`` returns the kernel: its program and the
# DRAM layout of its arguments. ``driver.run_kernel`` runs it on the
# cycle-accurate simulator (``device="tsim"``) with numpy arrays packed into
# tiles.
kernel = compiler.build(s, [A, B, C], target="vta", config=env.cfg, name="matmul")
print(kernel.describe())

rng = np.random.default_rng(0)
a = rng.integers(-128, 128, (o * env.BATCH, n * env.BLOCK_IN), dtype=np.int8)
b = rng.integers(-128, 128, (m * env.BLOCK_OUT, n * env.BLOCK_IN), dtype=np.int8)
r = driver.run_kernel(kernel, {"A": pack_matrix(a, env.BATCH, env.BLOCK_IN),
                               "B": pack_matrix(b, env.BLOCK_OUT, env.BLOCK_IN)})
c = unpack_matrix(r["C"])
want = (a.astype(np.int32) @ b.T.astype(np.int32)).astype(np.int8)
np.testing.assert_array_equal(c, want)
print(f"matmul 1x256x256: {r.summary()}")

# %%
# The functional simulator gives the same values and no timing:
f = driver.run_kernel(kernel, {"A": pack_matrix(a, env.BATCH, env.BLOCK_IN),
                               "B": pack_matrix(b, env.BLOCK_OUT, env.BLOCK_IN)}, device="fsim")
np.testing.assert_array_equal(unpack_matrix(f["C"]), want)
print(f"fsim: {f.summary()}")
err = max(np.abs(g.astype(np.int64) - want).max() for g in (c, unpack_matrix(f["C"])))
print(f"tsim and fsim match numpy (max abs error {err})")
