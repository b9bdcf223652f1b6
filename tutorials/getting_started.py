"""
Getting started: the config, the ISA, a hand-written program, two simulators
=============================================================================

The accelerator is a GEMM core behind four modules (fetch, load, compute,
store) that run decoupled and hand each other dependency tokens. This tutorial
reads its configuration, writes a program by hand (one 16 x 16 tile product),
runs it on the functional simulator (values, no timing) and on the
cycle-accurate one (values and cycles, equal to the RTL's), and writes the
run's timeline for Perfetto.

Run it from the repository root with ``python tutorials/getting_started.py``; it writes
into ``out/``.
"""
# %%
# The configuration
# -----------------
# A config is a handful of base-2 logarithms (``vta_hw.config.VTAConfig``); a
# preset names one, and every size is derived from it. ``vta info --config
# PRESET|FILE`` prints the same table.
import os

import numpy as np

from sim import cycle, functional
from vta_hw import isa
from vta_hw.config import load_config
from vta_hw.config_fields import table
from vta_hw.program import DramLayout

cfg = load_config("1x16_i8w8a32_15_15_18_17")
print(f"config {cfg.name}")
print("\n".join(table(cfg)))
print(f"GEMM peak {cfg.macs_per_cycle} MACs per cycle; SRAM depths: INP {cfg.inp_depth}, "
      f"WGT {cfg.wgt_depth}, ACC {cfg.acc_depth}, UOP {cfg.uop_depth} elements")

# %%
# A program by hand
# -----------------
# ``C = A . B^T`` for one INP element ``A`` (BATCH x BLOCK int8), one WGT element
# ``B`` (BLOCK x BLOCK int8), into one ACC element, stored as int8. The load
# module fetches A and B and hands a token to compute (``push_next``); compute
# waits for it (``pop_prev``), resets and multiplies (one uop: dst 0, src 0,
# wgt 0), and hands a token to store; store writes C and hands one back, which
# FINISH waits for. DRAM addresses count elements of the SRAM in question.
rng = np.random.default_rng(0)
a = rng.integers(-8, 8, (cfg.BATCH, cfg.BLOCK), dtype=np.int8)
b = rng.integers(-8, 8, (cfg.BLOCK, cfg.BLOCK), dtype=np.int8)

lay = DramLayout(cfg)
a_buf = lay.alloc("A", (1, cfg.BATCH, cfg.BLOCK), "int8", "input", a[None])
b_buf = lay.alloc("B", (1, cfg.BLOCK, cfg.BLOCK), "int8", "input", b[None])
c_buf = lay.alloc("C", (1, cfg.BATCH, cfg.BLOCK), "int8", "output")
uops = [isa.Uop(dst=0, src=0, wgt=0)]
uop_base = lay.alloc_uops(len(uops))
one = dict(y_size=1, x_size=1, x_stride=1)
loop = dict(uop_bgn=0, uop_end=1, iter_out=1, iter_in=1)
insns = [
    isa.Load(mem=isa.MemId.UOP, dram_base=uop_base, **one),                      # compute
    isa.Load(mem=isa.MemId.INP, dram_base=lay.elem(a_buf, "inp"), **one),        # load
    isa.Load(mem=isa.MemId.WGT, dram_base=lay.elem(b_buf, "wgt"), push_next=True, **one),
    isa.Gemm(reset=True, **loop),                                                # compute
    isa.Gemm(pop_prev=True, push_next=True, **loop),
    isa.Store(pop_prev=True, push_prev=True, dram_base=lay.elem(c_buf, "out"), **one),
    isa.Finish(pop_next=True),
]
program = lay.finish(insns, uops)
for insn in program.insns:
    print(isa.describe(insn))
want = (a.astype(np.int32) @ b.T.astype(np.int32)).astype(np.int8)

# %%
# Two simulators
# --------------
# ``sim.functional`` is the golden model: values and event counters, no clock.
# ``sim.cycle`` times every module cycle by cycle, as the RTL does.
f = functional.run(program)
got_f = program.read(f.dram, "C")[0]
np.testing.assert_array_equal(got_f, want)
print("functional:", f.counters.to_dict()["gemm_uops"], "GEMM uops; cycles: not timed")

c = cycle.run(program, trace=True)
got_c = program.read(c.dram, "C")[0]
np.testing.assert_array_equal(got_c, want)
util = c.gemm_macs / (c.cycles * cfg.macs_per_cycle)
print(f"cycle model: {c.cycles} cycles, GEMM utilization {util:.2%}, "
      f"DRAM {c.dram_read_bytes} B read, {c.dram_write_bytes} B written")
for name, stats in c.modules.items():
    print(f"  {name:8} {stats.to_dict()}")

# %%
# The timeline in Perfetto
# ------------------------
# ``trace=True`` kept every instruction's span, the tokens and the memory
# bursts. Open the file at https://ui.perfetto.dev (or chrome://tracing): one
# track per module and one for the memory port; 1 us on its axis is 1 cycle.
os.makedirs("out", exist_ok=True)
c.trace.write_chrome("out/getting_started.trace.json")
print("wrote out/getting_started.trace.json")
program.save("out/getting_started.vtaprog")   # vta sim / vta disasm out/getting_started.vtaprog
err = max(np.abs(g.astype(np.int64) - want).max() for g in (got_f, got_c))
print(f"both simulators match numpy (max abs error {err})")
