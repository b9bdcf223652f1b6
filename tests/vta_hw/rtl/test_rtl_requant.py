"""REQUANT's second stage (``rtl/requant.py``) against ``vta_hw.alu.alu_op``, in Amaranth's simulator."""
import random

import numpy as np
import pytest
from amaranth.sim import Simulator

from rtl_quiet import assert_raises

from vta_hw.alu import OUT_BITS, alu_op, requant_imm
from vta_hw.isa import AluOp
from vta_hw.rtl.requant import Requant

LANES = 4
#: Sums at the edges of the clip for small shifts, and the int32 extremes.
EDGES = [0, 1, -1, 127, 128, -128, -129, 255, 256, -256, -257, 2**31 - 1, -2**31, 0x55555555,
         -0x55555555, 127 << 7, (128 << 7) - 1, 128 << 7, -(128 << 7), -(128 << 7) - 1]


def _pack(vals):
    return sum((v & 0xFFFFFFFF) << (32 * k) for k, v in enumerate(vals))


def _unpack8(word):
    return [((word >> (OUT_BITS * k)) & 0xFF) - ((word >> (OUT_BITS * k + 7)) & 1) * 256
            for k in range(LANES)]


@pytest.mark.parametrize("relu", [False, True])
def test_requant_matches_reference(relu):
    """Every shift 0..31, each with sums at the clip edges and random ones, per relu."""
    rng = random.Random(relu)
    dut = Requant(LANES)
    cases = []
    for shift in range(32):
        pool = EDGES + [v << shift for v in (127, 128, -128, -129)] + [
            rng.randint(-2**31, 2**31 - 1) for _ in range(8)]
        cases += [(requant_imm(shift, relu), [rng.choice(pool) for _ in range(LANES)])
                  for _ in range(6)]
    got = []

    async def testbench(ctx):
        for ctl, sums in cases:
            ctx.set(dut.ctl, ctl)
            ctx.set(dut.sum, _pack(sums))
            got.append(_unpack8(ctx.get(dut.out)))

    sim = Simulator(dut)
    sim.add_testbench(testbench)
    sim.run()
    seen = set()
    for (ctl, sums), g in zip(cases, got):
        want = alu_op(AluOp.REQUANT, np.array(sums, np.int64), 0, ctl).tolist()
        assert g == want, f"ctl={ctl} sums={sums}: RTL {g}, reference {want}"
        seen.update(want)
    # both clip bounds and values between them were exercised
    assert {127, 0 if relu else -128} <= seen and len(seen) > 10, sorted(seen)


def test_requant_rejects_bad_lanes():
    assert_raises(ValueError, "lanes must be a positive int, not 0", Requant, 0)
