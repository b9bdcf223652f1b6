"""The vector ALU and the multi-cycle MUL against ``vta_hw.alu.alu_op`` (the one ALU reference), in Amaranth's simulator."""
import random

import numpy as np
import pytest
from amaranth.sim import Simulator

from rtl_quiet import assert_raises

from vta_hw.alu import alu_op
from vta_hw.isa import AluOp
from vta_hw.rtl.alu import MUL_LATENCY, Alu, SeqMul

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


ONE_CYCLE = [op for op in AluOp if op != AluOp.MUL]
#: The op whose value ``Alu`` gives: REQUANT's first stage is the sum, as ADD
#: (``test_rtl_requant.py`` checks the second stage).
_ALU_VALUE = {op: op for op in ONE_CYCLE} | {AluOp.REQUANT: AluOp.ADD}


@pytest.mark.parametrize("op", ONE_CYCLE, ids=lambda o: o.name)
def test_alu_matches_reference(op):
    _check_alu(op, _cases(op))


def test_alu_shr_every_amount():
    """SHR by every amount from -34 to 34 and the extremes: the edges of the left shift's
    ``~b`` amount (b = -1, -31, -32) and of the right shift's clamp (31, 32)."""
    values = [1, -1, 0x55555555, -2**31, 2**31 - 1, 0x12345678, -0x12345678, 3]
    amounts = list(range(-34, 35)) + [2**31 - 1, -2**31, 2**16, -2**16]
    cases = [([values[(k + j) % len(values)] for j in range(LANES)], [b] * LANES)
             for k, b in enumerate(amounts)]
    _check_alu(AluOp.SHR, cases)


def _check_alu(op, cases):
    """``Alu``'s value of ``op`` for each ``(a, b)`` in ``cases`` against the reference."""
    dut = Alu(LANES)
    got = []

    async def testbench(ctx):
        ctx.set(dut.op, op)
        await ctx.tick()            # ``op`` is registered: it applies from the next cycle
        for a, b in cases:
            ctx.set(dut.a, _pack(a))
            ctx.set(dut.b, _pack(b))
            got.append(_unpack(ctx.get(dut.out)))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    for (a, b), g in zip(cases, got):
        want = alu_op(_ALU_VALUE[op], np.array(a, np.int64), np.array(b, np.int64)).tolist()
        assert g == want, f"{op.name} a={a} b={b}: RTL {g}, reference {want}"


def test_alu_mul_is_not_combinational():
    """MUL belongs to ``SeqMul``: the combinational ALU passes ``a`` through."""
    dut = Alu(LANES)
    got = []

    async def testbench(ctx):
        ctx.set(dut.op, AluOp.MUL)
        await ctx.tick()
        ctx.set(dut.a, _pack([3, -4, 5, 7]))
        ctx.set(dut.b, _pack([2, 2, 2, 2]))
        got.append(_unpack(ctx.get(dut.out)))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    assert got == [[3, -4, 5, 7]]


def test_alu_op_applies_from_the_next_cycle():
    """``op`` is registered (one copy per lane): a new op changes ``out`` only after a tick,
    which the core relies on (it feeds the instruction's field a cycle ahead)."""
    dut = Alu(LANES)
    got = []

    async def testbench(ctx):
        ctx.set(dut.a, _pack([5, -6, 7, 100]))
        ctx.set(dut.b, _pack([3, 3, -9, 1]))
        ctx.set(dut.op, AluOp.ADD)
        await ctx.tick()
        ctx.set(dut.op, AluOp.MIN)
        got.append(_unpack(ctx.get(dut.out)))    # still ADD
        await ctx.tick()
        got.append(_unpack(ctx.get(dut.out)))    # MIN

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    assert got == [[8, -3, -2, 101], [3, -6, -9, 1]]


@pytest.mark.parametrize("gap", [MUL_LATENCY + 1, MUL_LATENCY + 3])
def test_seq_mul_matches_reference(gap):
    """Products every ``gap`` cycles: ``out`` holds a*b (low 32 bits, signed) from
    MUL_LATENCY cycles after ``start`` until the next start, and not earlier."""
    dut = SeqMul(LANES)
    cases = _cases(AluOp.MUL, n=30)
    seen = []   # per case: out in cycles T+1 .. T+gap

    async def testbench(ctx):
        for a, b in cases:
            ctx.set(dut.a, _pack(a))
            ctx.set(dut.b, _pack(b))
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            ctx.set(dut.a, _pack([0x1234] * LANES))  # operands only count in the start cycle
            ctx.set(dut.b, _pack([-7] * LANES))
            row = []
            for _ in range(gap):
                row.append(_unpack(ctx.get(dut.out)))
                await ctx.tick()
            seen.append(row)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    for (a, b), row in zip(cases, seen):
        want = alu_op(AluOp.MUL, np.array(a, np.int64), np.array(b, np.int64)).tolist()
        # row[k] is out in cycle T+1+k
        for k in range(MUL_LATENCY - 1, gap):
            assert row[k] == want, f"a={a} b={b} cycle T+{k + 1}: RTL {row[k]}, want {want}"
    # the product is not there early: some case differs from its product at T+MUL_LATENCY-1
    early = [row[MUL_LATENCY - 2] for row in seen]
    wants = [alu_op(AluOp.MUL, np.array(a, np.int64), np.array(b, np.int64)).tolist()
             for a, b in cases]
    assert any(e != w for e, w in zip(early, wants))


def test_alu_rejects_bad_lanes():
    assert_raises(ValueError, "lanes must be a positive int, not 0", Alu, 0)
    assert_raises(ValueError, "lanes must be a positive int, not 0", SeqMul, 0)
