"""``DmaWrite``: strided STOREs from an SRAM model, bursts split by length and page; an
element of two beats (32-bit bus) or of one (8-bit bus, BLOCK=1)."""
import numpy as np
import pytest
from amaranth.sim import Simulator
from rtl_memsim import MemSim
from rtl_quiet import assert_raises

from vta_hw.rtl.dma_write import DmaWrite
from vta_hw.timing import DramTiming

T = DramTiming(latency=2, bytes_per_cycle=2, max_burst_beats=3, page_bytes=32)

# (sram_base, dram_base, y_size, x_size, x_stride)
CASES = [(0, 0, 1, 1, 1), (3, 1, 2, 3, 5), (0, 3, 3, 4, 4), (5, 0, 1, 7, 7), (0, 0, 2, 0, 1),
         (2, 6, 0, 2, 2),
         (1, 2, 4, 1, 3),       # single-element rows
         (0, 5, 3, 6, 9)]       # rows across bursts and pages


@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
@pytest.mark.parametrize("bus,EB", [(32, 8), (8, 1)], ids=["bus32-two-beats", "bus8-one-beat"])
def test_dma_write(bus, EB, case):
    sb, db, ys, xs, st = case
    dut = DmaWrite(bus, T.max_burst_beats, T.page_bytes, EB, 5)
    rng = np.random.default_rng(2)
    sram = [int(v) % 2 ** (8 * EB) for v in rng.integers(0, 2**63, 32)]
    dram = np.zeros(1024, np.uint8)
    mem = MemSim(dut.mem, dram, T, bus // 8)
    done = []

    async def testbench(ctx):
        for n, v in zip(("sram_base", "dram_base", "y_size", "x_size", "x_stride"), case):
            ctx.set(getattr(dut, n), v)
        rd = 0
        for cycle in range(3000):
            ctx.set(dut.rd_data, sram[rd])      # registered read: address of last cycle
            mem.step(ctx, cycle)
            ctx.set(dut.start, cycle == 0)
            rd = ctx.get(dut.rd_addr)
            if ctx.get(dut.done):
                done.append(cycle)
                break
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    assert done
    want = np.zeros(1024, np.uint8)
    if xs:
        for y in range(ys):
            for x in range(xs):
                a = (db + y * st + x) * EB
                want[a:a + EB] = np.frombuffer(sram[sb + y * xs + x].to_bytes(EB, "little"),
                                               np.uint8)
    assert np.array_equal(dram, want)
    for _, addr, n, w in mem.bursts:
        assert w and n <= T.max_burst_beats
        assert addr // T.page_bytes == (addr + bus // 8 * n - 1) // T.page_bytes


def test_small_elements_rejected():
    assert_raises(ValueError, r"an OUT element \(2 bytes\) must be at least one bus beat",
                  DmaWrite, 64, 16, 4096, 2, 4)
