"""``Fetch``: bursts of the instruction stream and routing to the three command queues."""
import random

import numpy as np
import pytest
from amaranth.sim import Simulator
from rtl_memsim import MemSim
from rtl_quiet import assert_raises

from vta_hw import isa
from vta_hw.config import load_config
from vta_hw.rtl.fetch import Fetch
from vta_hw.timing import DramTiming

CFG = load_config("1x8_i8w8a32_11_12_13_14")
KINDS = [isa.Load(mem=isa.MemId.INP), isa.Load(mem=isa.MemId.WGT), isa.Load(mem=isa.MemId.UOP),
         isa.Load(mem=isa.MemId.ACC), isa.Store(), isa.Gemm(), isa.Alu(), isa.Finish()]
ROUTE = {isa.MemId.INP: "load", isa.MemId.WGT: "load"}


def _route(insn):
    if isinstance(insn, isa.Load):
        return ROUTE.get(insn.mem, "compute")
    return "store" if isinstance(insn, isa.Store) else "compute"


@pytest.mark.parametrize("bus,n,base,stall", [(64, 21, 4096 - 64, False), (32, 9, 0, True),
                                              (128, 40, 128, True), (16, 7, 4096 - 48, False),
                                              (8, 6, 4096 - 40, True)])
def test_fetch(bus, n, base, stall):
    t = DramTiming(latency=4, bytes_per_cycle=8, max_burst_beats=4, page_bytes=128)
    dut = Fetch(bus, t.max_burst_beats, t.page_bytes, cfg=CFG)
    rng = random.Random(n)
    insns = [rng.choice(KINDS) for _ in range(n)]
    dram = np.zeros(base + 16 * n + 64, np.uint8)
    for k, insn in enumerate(insns):
        dram[base + 16 * k:base + 16 * k + 16] = np.frombuffer(
            isa.insn_to_bytes(isa.encode(insn, CFG)), np.uint8)
    mem = MemSim(dut.mem, dram, t, bus // 8)
    got = {"load": [], "compute": [], "store": []}

    async def testbench(ctx):
        ctx.set(dut.insn_base, base)
        ctx.set(dut.insn_count, n)
        for cycle in range(3000):
            mem.step(ctx, cycle)
            ctx.set(dut.start, cycle == 0)
            for name in got:
                q = getattr(dut, f"to_{name}")
                ready = not (stall and cycle % 3 == 0)
                ctx.set(q.w_ready, ready)
                if ready and ctx.get(q.w_valid):
                    got[name].append(ctx.get(q.w_data))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    want = {"load": [], "compute": [], "store": []}
    for insn in insns:
        want[_route(insn)].append(isa.encode(insn, CFG))
    assert got == want
    bb = bus // 8
    assert [(a, b) for _, a, b, _ in mem.bursts] == t.bursts(base, 16 * n, bb)


def test_wide_bus_rejected():
    assert_raises(ValueError, "the fetch unit needs BUS_WIDTH <= 128 bits, not 256",
                  Fetch, 256, 16, 4096, cfg=CFG)
