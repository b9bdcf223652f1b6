"""``Control``: start pulse, done/irq, the cycle counter and busy counters."""
from amaranth.sim import Simulator

from vta_hw.rtl.control import REG_BUSY, REG_CTRL, REG_CYCLES, REG_INSN_BASE, REG_INSN_COUNT, Control


def test_control_run():
    dut = Control()
    seen = {}

    async def testbench(ctx):
        async def write(addr, v):
            ctx.set(dut.csr.addr, addr)
            ctx.set(dut.csr.wdata, v)
            ctx.set(dut.csr.we, 1)
            await ctx.tick()
            ctx.set(dut.csr.we, 0)

        def read(addr):
            ctx.set(dut.csr.addr, addr)
            return ctx.get(dut.csr.rdata)

        await write(REG_INSN_BASE, 0x40)
        await write(REG_INSN_COUNT, 7)
        assert (read(REG_INSN_BASE), read(REG_INSN_COUNT)) == (0x40, 7)
        await write(REG_CTRL, 1)          # cycle w; start is cycle 0 of the run
        assert ctx.get(dut.start) == 1 and ctx.get(dut.running) == 1
        for cycle in range(10):           # finish in cycle 9 -> CYCLES = 10
            ctx.set(dut.busy_load, cycle % 2)
            ctx.set(dut.busy_store, 1)
            ctx.set(dut.finish, cycle == 9)
            if cycle == 1:
                assert ctx.get(dut.start) == 0
                ctx.set(dut.csr.we, 1)    # a second start while running is ignored
                ctx.set(dut.csr.addr, REG_CTRL)
                ctx.set(dut.csr.wdata, 1)
            await ctx.tick()
            ctx.set(dut.csr.we, 0)
        ctx.set(dut.finish, 0)
        ctx.set(dut.busy_store, 0)
        await ctx.tick()
        await ctx.tick()
        seen["ctrl"] = read(REG_CTRL)
        seen["irq"] = ctx.get(dut.irq)
        seen["cycles"] = read(REG_CYCLES)
        seen["busy"] = {m: read(a) for m, a in REG_BUSY.items()}
        await write(REG_CTRL, 1)
        seen["irq_after_restart"] = ctx.get(dut.irq)
        seen["cycles_after_restart"] = read(REG_CYCLES)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    assert seen["ctrl"] & 3 == 0b10 and seen["irq"] == 1
    assert seen["cycles"] == 10
    assert seen["busy"] == {"fetch": 0, "load": 5, "compute": 0, "store": 10}
    assert seen["irq_after_restart"] == 0 and seen["cycles_after_restart"] == 0
