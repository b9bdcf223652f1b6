"""``DmaRead``: 2-D strided loads with padding into plain and banked SRAMs (a 64-bit bus:
two uops a beat), and elements assembled from several beats (an 8-bit bus: a uop is four
beats, an ACC element sixteen); addresses wrapping modulo a narrow memory."""
import numpy as np
import pytest
from amaranth.sim import Simulator

from rtl_memsim import MemSim
from vta_hw.rtl.dma_read import DmaRead, DmaTarget
from vta_hw.timing import DramTiming

BUS = 64
T = DramTiming(latency=3, bytes_per_cycle=4, max_burst_beats=4, page_bytes=64)

# (target, sram_base, dram_base, y_size, x_size, x_stride, y_pad_0, y_pad_1, x_pad_0, x_pad_1)
CASES = [
    ("uop", 0, 0, 1, 4, 4, 0, 0, 0, 0),     # aligned
    ("uop", 1, 0, 1, 4, 4, 0, 0, 0, 0),     # SRAM odd, DRAM even
    ("uop", 0, 1, 1, 3, 3, 0, 0, 0, 0),     # row starts mid-beat
    ("uop", 3, 5, 2, 5, 7, 0, 0, 0, 0),     # two rows, mid-beat both ends
    ("uop", 2, 13, 1, 40, 40, 0, 0, 0, 0),  # crosses bursts and a page
    ("acc", 0, 0, 1, 1, 1, 0, 0, 0, 0),
    ("acc", 2, 1, 2, 2, 3, 1, 1, 1, 2),     # every padding side
    ("acc", 0, 3, 0, 2, 2, 2, 1, 0, 0),     # y_size 0: pad rows only
    ("acc", 5, 2, 3, 3, 5, 0, 2, 3, 0),
    ("acc", 0, 2, 1, 9, 9, 0, 0, 0, 0),     # 18 beats: bursts of 4, page at 64 bytes
    ("acc", 1, 0, 2, 0, 1, 1, 1, 1, 1),     # x_size 0: no-op
    # the row phases (top pads, data, bottom pads) and the zero segments of a row
    ("acc", 0, 0, 0, 1, 1, 0, 0, 0, 0),     # no rows at all: no-op
    ("acc", 1, 0, 0, 3, 3, 0, 2, 0, 1),     # bottom pad rows only, right pad only
    ("acc", 2, 0, 0, 2, 2, 3, 0, 2, 0),     # top pad rows only, left pad only
    ("acc", 0, 4, 2, 1, 1, 0, 0, 0, 0),     # single-element rows, no pads
    ("acc", 3, 4, 2, 1, 2, 1, 1, 0, 0),     # single-element rows, pad rows of one zero
    ("uop", 1, 6, 3, 1, 5, 2, 2, 1, 1),     # single-element rows, pads on all sides
    ("uop", 0, 9, 2, 11, 13, 1, 2, 2, 3),   # rows across bursts and a page, all pads
    ("acc", 1, 3, 2, 5, 6, 1, 1, 3, 2),     # 10-beat rows across bursts and pages, all pads
]


def _expected(mem_bytes, eb, c, depth, sram):
    _, sb, db, ys, xs, st, yp0, yp1, xp0, xp1 = c
    if xs == 0:
        return sram
    W = xp0 + xs + xp1
    for r in range(yp0 + ys + yp1):
        for x in range(W):
            idx = sb + r * W + x
            y, xx = r - yp0, x - xp0
            if 0 <= y < ys and 0 <= xx < xs:
                a = (db + y * st + xx) * eb
                sram[idx] = int.from_bytes(mem_bytes[a:a + eb].tobytes(), "little")
            else:
                sram[idx] = 0
    return sram


TARGETS = [("uop", 4, 8), ("acc", 16, 6)]   # name, element bytes, log2 depth


def _run(case, dram, addr_bits=32, bus=BUS):
    """Run one LOAD on ``dram`` over a ``bus``-bit port: (SRAM writes {element: value},
    done cycle, bursts)."""
    targets = [DmaTarget(name, eb, depth, bus // 8) for name, eb, depth in TARGETS]
    dut = DmaRead(bus, T.max_burst_beats, T.page_bytes, targets, addr_bits)
    mem = MemSim(dut.mem, dram, T, bus // 8)
    sel = 0 if case[0] == "uop" else 1
    t = targets[sel]
    sram = {}
    done_at = []

    async def testbench(ctx):
        names = ("sram_base", "dram_base", "y_size", "x_size", "x_stride",
                 "y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1")
        for n, v in zip(names, case[1:]):
            ctx.set(getattr(dut, n), v)
        ctx.set(dut.sel, sel)
        for cycle in range(2000):
            mem.step(ctx, cycle)
            ctx.set(dut.start, cycle == 0)
            for b, port in enumerate(getattr(dut, f"w_{t.name}")):
                if ctx.get(port.en):
                    sram[ctx.get(port.addr) * t.banks + b] = ctx.get(port.data)
            for other in targets:
                if other is not t:
                    for port in getattr(dut, f"w_{other.name}"):
                        assert not ctx.get(port.en)
            if ctx.get(dut.done):
                done_at.append(cycle)
                break
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    assert done_at, "DMA never finished"
    return sram, done_at[0], mem.bursts


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{k}" for k, c in enumerate(CASES)])
@pytest.mark.parametrize("bus", [64, 8])
def test_dma_read(bus, case):
    dram = np.random.default_rng(1).integers(0, 256, 4096, dtype=np.uint8)
    sram, _, bursts = _run(case, dram, bus=bus)
    eb, depth = {name: (eb, depth) for name, eb, depth in TARGETS}[case[0]]
    assert sram == _expected(dram, eb, case, 1 << depth, {})
    for cycle, addr, n, w in bursts:
        assert not w and n <= T.max_burst_beats
        assert addr // T.page_bytes == (addr + n * bus // 8 - 1) // T.page_bytes, \
            "burst crosses a page"


# rows that run over the top of a 2**12-byte memory, and one that starts above it
WRAP_CASES = [("acc", 2, 250, 2, 9, 7, 1, 0, 1, 1),     # elements 250..265: bytes 4000..4256
              ("uop", 3, 1021, 2, 7, 9, 0, 1, 0, 0),    # uop lanes split by the wrap
              ("uop", 0, 5 * 1024 + 3, 1, 6, 6, 0, 0, 0, 0)]


@pytest.mark.parametrize("case", WRAP_CASES, ids=[f"{c[0]}-{k}" for k, c in enumerate(WRAP_CASES)])
def test_addresses_wrap_modulo_the_memory(case):
    """With ``addr_bits`` = 12 the engine reads byte A at A mod 4096, in the bursts and
    cycles of A on a memory that does not wrap (the rule in ``vta_hw.rtl.memport``)."""
    small = np.random.default_rng(3).integers(0, 256, 4096, dtype=np.uint8)
    big = np.tile(small, 8)     # byte A holds what the small memory has at A mod 4096
    want_sram, want_done, want_bursts = _run(case, big, addr_bits=32)
    got_sram, got_done, got_bursts = _run(case, small, addr_bits=12)
    assert max(a + n * 8 for _, a, n, _ in want_bursts) > 4096   # the case does wrap
    assert got_sram == want_sram and got_done == want_done
    assert got_bursts == [(c, a % 4096, n, w) for c, a, n, w in want_bursts]
