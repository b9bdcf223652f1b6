"""The vector ALU against ``sim.machine.alu_op``, in Amaranth's simulator."""
import random

import numpy as np
import pytest
from amaranth.sim import Simulator

from rtl_quiet import assert_raises

from sim.machine import alu_op
from vta_hw.isa import AluOp
from vta_hw.rtl.alu import Alu

LANES = 4
EDGES = [0, 1, -1, 2, -2, 31, 32, 33, -31, -32, -33, 127, -128, 255, 2**31 - 1, -2**31,
         2**16, -2**16, 0x55555555, -0x55555555]


def _pack(vals):
    return sum((v & 0xFFFFFFFF) << (32 * k) for k, v in enumerate(vals))


def _unpack(word):
    return [((word >> (32 * k)) & 0xFFFFFFFF) - ((word >> (32 * k + 31)) & 1) * 2**32
            for k in range(LANES)]


def _cases(op, n=40, seed=0):
    rng = random.Random(seed * 7 + op)
    pool = EDGES + [rng.randint(-2**31, 2**31 - 1) for _ in range(20)]
    return [([rng.choice(pool) for _ in range(LANES)], [rng.choice(pool) for _ in range(LANES)])
            for _ in range(n)]


@pytest.mark.parametrize("op", list(AluOp), ids=lambda o: o.name)
def test_alu_matches_reference(op):
    dut = Alu(LANES)
    cases = _cases(op)
    got = []

    async def testbench(ctx):
        ctx.set(dut.op, op)
        for a, b in cases:
            ctx.set(dut.a, _pack(a))
            ctx.set(dut.b, _pack(b))
            got.append(_unpack(ctx.get(dut.out)))

    sim = Simulator(dut)
    sim.add_testbench(testbench)
    sim.run()
    for (a, b), g in zip(cases, got):
        want = alu_op(op, np.array(a, np.int64), np.array(b, np.int64)).tolist()
        assert g == want, f"{op.name} a={a} b={b}: RTL {g}, reference {want}"


def test_alu_rejects_bad_lanes():
    assert_raises(ValueError, "lanes must be a positive int, not 0", Alu, 0)
