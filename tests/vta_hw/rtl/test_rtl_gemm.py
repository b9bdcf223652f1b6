"""``MacArray``: ``acc + inp . wgt^T`` with three register stages, int8 x int8 -> int32 wrap."""
import numpy as np
import pytest
from amaranth.sim import Simulator

from vta_hw.config import load_config
from vta_hw.rtl.gemm import MacArray

PRESETS = ["1x4_i8w8a32_10_10_10_11_bus32", "1x8_i8w8a32_11_12_13_14"]


def _pack(arr, bits):
    flat = arr.reshape(-1).astype(np.int64)
    return sum((int(v) & ((1 << bits) - 1)) << (bits * k) for k, v in enumerate(flat))


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("kind", ["random", "extremes"])
def test_mac_array(preset, kind):
    cfg = load_config(preset)
    dut = MacArray(cfg)
    rng = np.random.default_rng(3)
    B, BI, BO = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    cases = []
    for _ in range(6):
        if kind == "random":
            inp = rng.integers(-128, 128, (B, BI))
            wgt = rng.integers(-128, 128, (BO, BI))
            acc = rng.integers(-2**31, 2**31, (B, BO))
        else:
            inp = np.full((B, BI), rng.choice([-128, 127]))
            wgt = np.full((BO, BI), -128)
            acc = np.full((B, BO), rng.choice([2**31 - 1, -2**31]))
        cases.append((inp, wgt, acc))
    got = []

    async def testbench(ctx):
        for inp, wgt, acc in cases:
            ctx.set(dut.inp, _pack(inp, 8))
            ctx.set(dut.wgt, _pack(wgt, 8))
            await ctx.tick()
            ctx.set(dut.inp, 0)          # sampled in one cycle only
            ctx.set(dut.wgt, 0)
            await ctx.tick().repeat(2)
            ctx.set(dut.acc, _pack(acc, 32))
            got.append(ctx.get(dut.out))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    for (inp, wgt, acc), g in zip(cases, got):
        want = (acc.astype(np.int64) + inp.astype(np.int64) @ wgt.T.astype(np.int64))
        want = (want & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
        assert g == _pack(want, 32)


def test_soft_mul8_is_exact_for_every_int8_pair():
    """The iCE40 GEMM's logic multiplier (radix-4 Booth) against ``x * w`` exhaustively."""
    from amaranth import Module, Signal, signed

    from vta_hw.rtl.gemm import soft_mul8
    x, w, y = Signal(signed(8)), Signal(signed(8)), Signal(signed(16))
    m = Module()
    m.d.comb += y.eq(soft_mul8(x, w))
    bad = []

    async def testbench(ctx):
        for a in range(-128, 128):
            for b in range(-128, 128):
                ctx.set(x, a)
                ctx.set(w, b)
                if ctx.get(y) != a * b:
                    bad.append((a, b, ctx.get(y)))

    sim = Simulator(m)
    sim.add_testbench(testbench)
    sim.run()
    assert not bad, bad[:5]
