"""
One kernel on the RTL, with a waveform
======================================

The accelerator's hardware is Amaranth RTL (``vta_hw/rtl``); Verilator builds
it into a simulator. This tutorial compiles a small matrix multiply for a small
preset, runs it on the cycle model and on the RTL (built on first use into
``build/rtl/``, 20 s to 2 min), checks that both give the same values and the
same cycle count, and keeps the RTL run's waveform (a VCD file, for GTKWave or
Surfer).

Run it with ``python tutorials/rtl_kernel.py``; ``--no-rtl`` stops before the
RTL (what CI runs: the RTL build is in the slow tests).
"""
# %%
import sys
from pathlib import Path

import numpy as np

import compiler
import driver
from compiler import te
from compiler.topi.vta import Env, pack_matrix, unpack_matrix

env = Env.from_config("1x4_i8w8a32_8_8_8_9_bus32")
o, n, m = 2, 4, 2          # (2 x 16) x (16 x 8)^T with BLOCK 4

# %%
# The kernel: the Simple Matrix Multiply schedule on this preset.
A = te.placeholder((o, n, env.BATCH, env.BLOCK_IN), env.inp_dtype, name="A")
B = te.placeholder((m, n, env.BLOCK_OUT, env.BLOCK_IN), env.wgt_dtype, name="B")
A_buf = te.compute(A.shape, lambda *i: A[i], name="A_buf")
B_buf = te.compute(B.shape, lambda *i: B[i], name="B_buf")
ko, ki = te.reduce_axis(n, name="ko"), te.reduce_axis(env.BLOCK_IN, name="ki")
C_buf = te.compute((o, m, env.BATCH, env.BLOCK_OUT), lambda bo, co, bi, ci: te.sum(
    te.cast(A_buf[bo, ko, bi, ki], env.acc_dtype) * te.cast(B_buf[co, ko, ci, ki], env.acc_dtype),
    axis=[ko, ki]), name="C_buf")
C = te.compute(C_buf.shape, lambda *i: te.cast(C_buf[i], env.inp_dtype), name="C")
s = te.create_schedule(C)
s[A_buf].set_scope(env.inp_scope)
s[B_buf].set_scope(env.wgt_scope)
s[C_buf].set_scope(env.acc_scope)
bo, co, bi, ci = s[C_buf].op.axis
s[C_buf].reorder(ko, bo, co, bi, ci, ki)
s[A_buf].compute_at(s[C_buf], ko)
s[B_buf].compute_at(s[C_buf], ko)
for stage in (A_buf, B_buf, C):
    s[stage].pragma(s[stage].op.axis[0], env.dma_copy)
s[C_buf].tensorize(bi, env.gemm)
kernel = compiler.build(s, [A, B, C], target="vta", config=env.cfg, name="matmul")

rng = np.random.default_rng(0)
a = rng.integers(-128, 128, (o * env.BATCH, n * env.BLOCK_IN), dtype=np.int8)
b = rng.integers(-128, 128, (m * env.BLOCK_OUT, n * env.BLOCK_IN), dtype=np.int8)
inputs = {"A": pack_matrix(a, env.BATCH, env.BLOCK_IN), "B": pack_matrix(b, env.BLOCK_OUT, env.BLOCK_IN)}
want = (a.astype(np.int32) @ b.T.astype(np.int32)).astype(np.int8)

tsim = driver.run_kernel(kernel, inputs, device="tsim")
np.testing.assert_array_equal(unpack_matrix(tsim["C"]), want)
print(f"cycle model on {env.cfg.name}: {tsim.summary()}")
print(f"cycle model matches numpy (max abs error "
      f"{np.abs(unpack_matrix(tsim['C']).astype(np.int64) - want).max()})")
if "--no-rtl" in sys.argv:
    raise SystemExit(0)

# %%
# The RTL
# -------
# ``driver.rtl.run_programs`` runs programs on the Verilator model of a config;
# ``vcd=True`` builds it with tracing and keeps each run's waveform. The
# ``Device("rtl")`` backend runs programs the same way, without the waveform.
from driver.rtl.run import run_programs  # noqa: E402

prog = kernel.program
(rtl,) = run_programs(env.cfg, [(prog, prog.dram_image(inputs))], vcd=True)
np.testing.assert_array_equal(unpack_matrix(prog.read(rtl.dram, "C")), want)
assert rtl.cycles == tsim.cycles, (rtl.cycles, tsim.cycles)
vcd = Path("out/matmul_rtl.vcd")
vcd.parent.mkdir(exist_ok=True)
vcd.write_bytes(Path(rtl.vcd).read_bytes())
print(f"RTL: {rtl.cycles} cycles (equal to the cycle model's), busy {rtl.busy}; "
      f"waveform {vcd} ({vcd.stat().st_size} bytes)")
print(f"RTL matches numpy (max abs error "
      f"{np.abs(unpack_matrix(prog.read(rtl.dram, 'C')).astype(np.int64) - want).max()})")
