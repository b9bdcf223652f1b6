"""The SoC's block RAM (``fpga.memory``) in Amaranth's simulator, on every bus width it serves.

Host words go in and come back out (several rows a word on 8- and 16-bit buses), and
the accelerator's port sees the same bytes with ``DramTiming(latency=2)``'s timing: a
read burst accepted in cycle g has beat k in cycle g + 2 + k; a write burst's beats are
taken from g + 1 and ``wr_done`` pulses two cycles after the last.
"""
import numpy as np
import pytest
from amaranth.sim import Simulator

from fpga.memory import BlockRamMemory

MEM_BYTES = 256


async def host(ctx, dut, addr, wdata=None):
    """One host word access; returns (read word or None, cycles from request to ack)."""
    ctx.set(dut.host_req, 1)
    ctx.set(dut.host_we, wdata is not None)
    ctx.set(dut.host_addr, addr)
    ctx.set(dut.host_wdata, wdata or 0)
    for n in range(1, 10):
        if ctx.get(dut.host_ack):
            word = ctx.get(dut.host_rdata)
            await ctx.tick()
            ctx.set(dut.host_req, 0)
            return (None if wdata is not None else word), n
        await ctx.tick()
    raise AssertionError(f"no host_ack for address {addr}")


@pytest.mark.parametrize("bus_width", [8, 16, 32, 64])
def test_host_words_and_bursts(bus_width):
    bb = bus_width // 8
    dut = BlockRamMemory(bus_width, 4, MEM_BYTES)
    rng = np.random.default_rng(bus_width)
    words = {a: int(v) for a, v in zip((0, 4, 12, 40, MEM_BYTES - 4),
                                       rng.integers(0, 2**32, 5, dtype=np.uint64))}
    image = np.zeros(MEM_BYTES, np.uint8)
    for a, v in words.items():
        image[a:a + 4] = np.frombuffer(v.to_bytes(4, "little"), np.uint8)
    out = {}

    async def testbench(ctx):
        p = dut.mem
        for a, v in words.items():
            _, out[("write", a)] = await host(ctx, dut, a, v)
        for a in words:
            out[("read", a)] = await host(ctx, dut, a)
        # a read burst of 4 beats from byte 8: accepted in this cycle (g)
        ctx.set(p.cmd_valid, 1)
        ctx.set(p.cmd_addr, 8)
        ctx.set(p.cmd_len, 4)
        ctx.set(p.cmd_write, 0)
        assert ctx.get(p.cmd_ready)
        await ctx.tick()
        ctx.set(p.cmd_valid, 0)
        beats = []
        for c in range(1, 8):
            if ctx.get(p.rd_valid):
                beats.append((c, ctx.get(p.rd_data)))
            await ctx.tick()
        out["read beats"] = beats
        # a write burst of 2 beats to byte 24
        ctx.set(p.cmd_valid, 1)
        ctx.set(p.cmd_addr, 24)
        ctx.set(p.cmd_len, 2)
        ctx.set(p.cmd_write, 1)
        await ctx.tick()
        ctx.set(p.cmd_valid, 0)
        ctx.set(p.wr_valid, 1)
        events = []
        for c in range(1, 8):
            ctx.set(p.wr_data, (0xA5 + c) * (2 ** bus_width - 1) // 255)
            if ctx.get(p.wr_ready):
                events.append((c, "beat"))
            if ctx.get(p.wr_done):
                events.append((c, "done"))
            await ctx.tick()
        ctx.set(p.wr_valid, 0)
        out["write events"] = events
        out["after write"] = (await host(ctx, dut, 24))[0]

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    parts = max(4 // bb, 1)
    for a, v in words.items():
        assert out[("write", a)] == parts, f"write ack after {out[('write', a)]} cycles"
        assert out[("read", a)][0] == v, f"host read at {a}: {out[('read', a)][0]:#x} != {v:#x}"
        assert out[("read", a)][1] == parts + 1
    want = [(2 + k, int.from_bytes(image[8 + k * bb:8 + (k + 1) * bb].tobytes(), "little"))
            for k in range(4)]
    assert out["read beats"] == want
    assert out["write events"] == [(1, "beat"), (2, "beat"), (4, "done")]
    first = [(0xA5 + c) & 0xFF for c in (1, 2) for _ in range(bb)]
    assert out["after write"] == int.from_bytes(bytes((first + list(image[24 + 2 * bb:28]))[:4]),
                                                "little")
