"""``SyncQueue`` (command queues) and ``TokenQueue``: order, full/empty, one-cycle latency."""
import pytest
from amaranth.sim import Simulator

from rtl_quiet import assert_raises

from vta_hw.rtl.queue import SyncQueue
from vta_hw.rtl.token_queue import TokenQueue

# per cycle: (push?, pop?) ; expected visible state is checked against a model
PATTERNS = {
    "fill_then_drain": [(1, 0)] * 5 + [(0, 1)] * 5,
    "push_pop_same_cycle": [(1, 0), (1, 1), (1, 1), (0, 1), (0, 1)],
    "over_full": [(1, 0)] * 7 + [(1, 1)] * 3 + [(0, 1)] * 6,
    "idle": [(0, 1), (0, 0), (1, 1), (0, 1)],
}


@pytest.mark.parametrize("tagged", [False, True], ids=["plain", "tagged"])
@pytest.mark.parametrize("depth", [1, 2, 4])  # 1: the iCEBreaker preset's command queues
@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_sync_queue(name, depth, tagged):
    dut = SyncQueue(8, depth, tag_width=3 if tagged else 0)
    model, nxt, popped = [], 10, []

    async def testbench(ctx):
        nonlocal nxt
        for push, pop in PATTERNS[name]:
            ctx.set(dut.w_valid, push)
            ctx.set(dut.w_data, nxt)
            if tagged:
                ctx.set(dut.w_tag, nxt * 5 % 8)     # the tag travels with its entry
            ctx.set(dut.r_ready, pop)
            assert ctx.get(dut.level) == len(model)
            assert ctx.get(dut.r_valid) == (len(model) > 0)
            assert ctx.get(dut.w_ready) == (len(model) < depth)
            did_pop = pop and model
            if did_pop:
                assert ctx.get(dut.r_data) == model[0]
                if tagged:
                    assert ctx.get(dut.r_tag) == model[0] * 5 % 8
            did_push = push and len(model) < depth
            await ctx.tick()
            if did_pop:
                popped.append(model.pop(0))
            if did_push:
                model.append(nxt)
                nxt += 1

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    assert popped == sorted(popped)


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_token_queue(name):
    depth = 4
    dut = TokenQueue(depth)
    count = 0

    async def testbench(ctx):
        nonlocal count
        for push, pop in PATTERNS[name]:
            ctx.set(dut.push_valid, push)
            ctx.set(dut.pop_ready, pop)
            assert ctx.get(dut.pop_valid) == (count > 0)
            assert ctx.get(dut.push_ready) == (count < depth)
            delta = (1 if push and count < depth else 0) - (1 if pop and count > 0 else 0)
            await ctx.tick()
            count += delta

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()


@pytest.mark.parametrize("cls,args,msg", [
    (SyncQueue, (8, 0), "depth must be a positive int, not 0"),
    (SyncQueue, (0, 4), "width must be a positive int, not 0"),
    (SyncQueue, (8, 4, -1), "tag_width must be a non-negative int, not -1"),
    (TokenQueue, (0,), "depth must be a positive int, not 0"),
])
def test_bad_parameters(cls, args, msg):
    assert_raises(ValueError, msg, cls, *args)
