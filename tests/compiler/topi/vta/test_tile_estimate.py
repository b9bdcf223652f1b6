"""The tile search's cycle estimate counts what the compute module pays besides uops (each
GEMM/ALU instruction's decode and pipeline drain, the epilogue's ACC vector loads), treats
an odd last tile as unoverlapped, and follows the cycle model on compute-bound convs."""
from __future__ import annotations

import pytest

from compiler.topi.vta import conv2d_program, tiling
from compiler.topi.vta.tiling import Conv2dShape, Tiling, compute_overhead, estimate
from sim import cycle
from vta_hw import timing
from vta_hw.config import load_config

CFG = load_config()
# 64 -> 64 channels (4 blocks each), 14x14, 3x3, padding 1: compute-bound
SHAPE = Conv2dShape(1, 4, 14, 14, 4, 3, 3, 1, 1, 1, 1)


def test_each_instruction_costs_its_decode_and_pipeline_depth():
    # decode 1 + drain GEMM_PIPELINE_DEPTH 6 + back in IDLE 1 = 8 cycles per instruction
    assert tiling.INSN_OVERHEAD == timing.INSN_DECODE_CYCLES + timing.GEMM_PIPELINE_DEPTH + 1 == 8
    t = Tiling(th=7, tw=14, toc=2, tic=2, tkh=1, vt=2)
    over = compute_overhead(t, SHAPE, CFG, bias=1)
    assert over["steps"] == 2 * 3 * 8             # ceil(4/2) x ceil(3/1) reduction steps
    assert over["epilogue"] == 1 * 8              # REQUANT (bias the only ACC vector)
    # per-channel shifts too (2 vectors): reset, ADD, SHR, MAX, MIN
    assert compute_overhead(t, SHAPE, CFG, bias=2)["epilogue"] == (1 + 4) * 8
    # the bias vectors: one compute-run DMA of toc=2 ACC elements (128 bytes, 16 beats of
    # the 64-bit port) after the DRAM latency of 32: its instruction + 2 + 33 + 16 cycles
    assert over["vectors"] == 8 + 2 + 33 + 16


def test_the_overhead_is_in_the_estimate(monkeypatch):
    t = Tiling(th=7, tw=14, toc=2, tic=2, tkh=1, vt=1)
    with_it = estimate(t, SHAPE, CFG, 1)
    monkeypatch.setattr(tiling, "INSN_OVERHEAD", 0)
    without = estimate(t, SHAPE, CFG, 1)
    tiles, steps = 2 * 1 * 2, 2 * 3
    # one thread: every tile pays its steps' GEMMs, its REQUANT and the bias load's
    # instruction, 8 cycles each
    assert with_it - without == pytest.approx(tiles * (steps + 1 + 1) * 8)


def test_one_tile_with_two_threads_is_estimated_as_one_thread():
    one = Tiling(th=14, tw=14, toc=4, tic=1, tkh=3, vt=1)
    two = Tiling(th=14, tw=14, toc=4, tic=1, tkh=3, vt=2)
    assert estimate(two, SHAPE, CFG, 1) == pytest.approx(estimate(one, SHAPE, CFG, 1))


@pytest.mark.parametrize("t", [Tiling(14, 14, 4, 4, 3, 1), Tiling(7, 14, 4, 1, 1, 2),
                               Tiling(14, 14, 2, 1, 2, 2)], ids=str)
def test_the_estimate_follows_the_cycle_model(t):
    k = conv2d_program(CFG, (1, 64, 14, 14), (64, 64, 3, 3), 1, 1, shift=3, relu=True,
                       tiling=t)
    cycles = cycle.run(k.program, values=False).cycles
    # GEMM uops alone are 14*14*4*4*9 = 28224 cycles; the estimate is within 7 %
    assert estimate(t, SHAPE, CFG, 1) == pytest.approx(cycles, rel=0.07)
