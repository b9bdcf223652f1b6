"""``Arbiter``: fixed priority, one burst at a time, routing of beats and write completion."""
import pytest
from amaranth.sim import Simulator

from rtl_quiet import assert_raises

from vta_hw.rtl.arbiter import Arbiter

# requests: client -> (first cycle it requests, beats, write)
CASES = {
    "priority_same_cycle": {0: (0, 2, 0), 1: (0, 1, 0), 2: (0, 1, 1)},
    "low_first_then_high_waits": {2: (0, 3, 0), 0: (1, 1, 0)},
    "write_holds_until_done": {1: (0, 2, 1), 0: (2, 1, 0)},
}
LAT = 3


def _simulate(reqs):
    """Reference: grants in cycle order under the contract."""
    pending = dict(reqs)
    free_at, t, grants = 0, 0, []
    while pending:
        ready = [c for c, (t0, _, _) in pending.items() if t0 <= t and t >= free_at]
        if ready:
            c = min(ready)
            _, n, w = pending.pop(c)
            grants.append((t, c))
            free_at = (t + 1 + (n - 1) + LAT if w else t + LAT + n - 1) + 1
        t += 1
    return grants


@pytest.mark.parametrize("name", sorted(CASES))
def test_arbiter(name):
    reqs = CASES[name]
    dut = Arbiter(32, 16, 3)
    grants, beats = [], {c: 0 for c in reqs}
    sched = {}

    async def testbench(ctx):
        live = {c: True for c in reqs}
        for cycle in range(60):
            ctx.set(dut.mem.cmd_ready, 1)
            ev = sched.pop(cycle, [])
            ctx.set(dut.mem.rd_valid, "rd" in ev)
            ctx.set(dut.mem.wr_ready, "wr" in ev)
            ctx.set(dut.mem.wr_done, "done" in ev)
            for c, (t0, n, w) in reqs.items():
                cl = dut.clients[c]
                ctx.set(cl.cmd_valid, live[c] and cycle >= t0)
                ctx.set(cl.cmd_len, n)
                ctx.set(cl.cmd_write, w)
                ctx.set(cl.cmd_addr, 64 * c)
                ctx.set(cl.wr_valid, 1)
            for c in reqs:
                cl = dut.clients[c]
                if ctx.get(cl.rd_valid) or (ctx.get(cl.wr_ready)):
                    beats[c] += 1
                if ctx.get(cl.cmd_ready):
                    assert ctx.get(dut.mem.cmd_addr) == 64 * c
                    grants.append((cycle, c))
                    live[c] = False
                    _, n, w = reqs[c]
                    for k in range(n):
                        sched.setdefault(cycle + (1 + k if w else LAT + k), []).append(
                            "wr" if w else "rd")
                    if w:
                        sched.setdefault(cycle + n + LAT, []).append("done")
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    assert grants == _simulate(reqs)
    assert beats == {c: n for c, (_, n, _) in reqs.items()}


def test_bad_client_count():
    assert_raises(ValueError, "n_clients must be a positive int, not 0", Arbiter, 32, 16, 0)
