"""The cycle model against the RTL: the same cycle count, and the same busy counters.

Every program runs on the Verilator build of ``vta_hw.rtl`` through
``driver.rtl.run_programs`` (one simulator process per config, built once and
cached) and on ``sim.cycle.run``; the total cycles (the RTL's CYCLES
register) and each module's busy cycles (BUSY_<module>: cycles not in IDLE,
the model's ``busy + stalls``) must be equal. Programs: the directed set below
(each rule of the model, hand-built, plus the example GEMM, a small
convolution and every directed program of the RTL tests) and ``N_RANDOM``
random programs of ``sim.random_program`` on the small preset, then the
directed set and ``N_RANDOM_OTHER`` more random programs under another DRAM
timing, and the directed set and ``N_RANDOM_OTHER`` random programs on the
iCEBreaker's two presets (1x4 on a 32-bit bus, 1x1 on an 8-bit bus) under the
default and the SoC's DRAM timing, in every run; every other preset under the
slow marker.

A program that once differed stays here as a directed case (see
``docs/cycle-model-notes.md``).
"""
from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import pytest

from cycle_helpers import gemm, program
from hand_conv2d import hand_conv2d_program
from driver.examples.gemm import gemm_program
from driver.rtl import run_programs
from sim import cycle
from sim.random_program import random_program
from vta_hw.config import load_config
from vta_hw.isa import Alu, AluOp, Finish, Gemm, Load, MemId, Store
from vta_hw.timing import DramTiming

SMALL = "1x4_i8w8a32_10_10_10_11_bus32"
#: The RTL issue's directed programs (``DIRECTED``: name -> ``cfg -> Program``).
_RTL_PROGRAMS = Path(__file__).resolve().parents[1] / "driver" / "rtl" / "rtl_programs.py"
N_RANDOM = 200
N_RANDOM_SLOW = 40
N_RANDOM_OTHER = 50


def directed(cfg) -> list[tuple[str, object]]:
    """Hand-built programs, one per timing rule (names say which)."""
    alu = dict(uop_bgn=0, uop_end=1, iter_out=5, iter_in=1, use_imm=True, imm=3)
    small = dict(y_size=1, x_size=1, x_stride=1)
    out = [
        ("finish only", [Finish()]),
        ("gemm 1", [gemm(1), Finish()]),
        ("gemm 2x3x1", [Gemm(uop_bgn=0, uop_end=1, iter_out=2, iter_in=3), Finish()]),
        ("gemm empty", [gemm(0), Finish()]),
        ("gemm reset", [gemm(4, reset=True), Finish()]),
        ("alu imm", [Alu(alu_op=AluOp.ADD, **alu), Finish()]),
        ("alu src", [Alu(alu_op=AluOp.MAX, **{**alu, "use_imm": False}), Finish()]),
        ("load->gemm token", [Load(mem=MemId.INP, y_size=1, x_size=2, x_stride=2,
                                   push_next=True), gemm(1, pop_prev=True), Finish()]),
        ("load padded", [Load(mem=MemId.INP, y_pad_0=1, x_pad_0=1, x_pad_1=2, y_pad_1=1,
                              push_next=True, **small), Finish(pop_prev=True)]),
        ("load pad rows only", [Load(mem=MemId.INP, y_size=0, x_size=2, x_stride=2, y_pad_0=2,
                                     push_next=True), Finish(pop_prev=True)]),
        ("load wgt multi-burst", [Load(mem=MemId.WGT, push_next=True, **small),
                                  Finish(pop_prev=True)]),
        ("load strided rows", [Load(mem=MemId.INP, y_size=3, x_size=5, x_stride=9,
                                    push_next=True), Finish(pop_prev=True)]),
        ("load uop", [Load(mem=MemId.UOP, y_size=1, x_size=7, x_stride=7), Finish()]),
        ("load acc", [Load(mem=MemId.ACC, **small), Finish()]),
        ("sync load", [Load(mem=MemId.INP, push_next=True), Finish(pop_prev=True)]),
        ("sync store", [Store(push_prev=True), Finish(pop_next=True)]),
        ("store", [Store(push_prev=True, y_size=2, x_size=3, x_stride=4),
                   Finish(pop_next=True)]),
        ("compute->store->compute", [gemm(3, push_next=True), Store(pop_prev=True, push_prev=True,
                                                                   **small),
                                     Finish(pop_next=True)]),
        ("arbiter race", [gemm(1), Load(mem=MemId.INP, x_pad_0=5, **small),
                          Load(mem=MemId.ACC, **small), Finish()]),
        ("compute queue fills", [gemm(40)] * 20 + [Finish()]),
        ("token queue fills", [Load(mem=MemId.INP, push_next=True)] * 35 + [gemm(200)]
         + [gemm(1, pop_prev=True)] * 35 + [Finish()]),
        ("fetch bursts", [gemm(1)] * 16 + [Finish()]),
        ("dispatch behind a busy module",
         [gemm(30), gemm(5), Load(mem=MemId.INP, push_next=True, **small),
          gemm(1, pop_prev=True), Finish()]),
    ]
    progs = [(name, program(insns, cfg, data_bytes=4096)) for name, insns in out]
    progs.append(("example gemm", gemm_program(cfg, 4 * cfg.BATCH, 2 * cfg.BLOCK,
                                               2 * cfg.BLOCK)[0]))
    if cfg.BATCH == 1:  # the convolution is written for batch 1
        progs.append(("conv", hand_conv2d_program(cfg, h=4, w=4, cin=2 * cfg.BLOCK,
                                             cout=cfg.BLOCK, rows=2)[0]))
    return progs + rtl_directed(cfg)


def rtl_directed(cfg) -> list[tuple[str, object]]:
    """The directed programs of the RTL tests (``tests/driver/rtl/rtl_programs.py``)."""
    spec = importlib.util.spec_from_file_location("rtl_programs", _RTL_PROGRAMS)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return [(f"RTL directed {name}", build(cfg)) for name, build in mod.DIRECTED.items()]


def compare(cfg, progs, timing: DramTiming | None = None) -> list[str]:
    """Run ``progs`` (``[(name, program)]``) on both; one line per difference."""
    results = run_programs(cfg, [(p, None) for _, p in progs], timing)
    bad = []
    for (name, prog), rtl in zip(progs, results):
        model = cycle.run(prog, values=False, dram_timing=timing)
        busy = {m: s.busy + sum(s.stalls.values()) for m, s in model.modules.items()}
        if model.cycles != rtl.cycles or busy != rtl.busy:
            bad.append(f"{cfg.name} {name}: cycles model {model.cycles} rtl {rtl.cycles}; "
                       f"busy model {busy} rtl {rtl.busy}")
    return bad


@pytest.fixture(scope="session")
def small_cfg_rtl():
    return load_config(SMALL)


def test_directed_programs_small_preset(small_cfg_rtl):
    bad = compare(small_cfg_rtl, directed(small_cfg_rtl))
    assert not bad, "\n".join(bad)


#: Short latency, slow beats (one per 4 cycles), short bursts, small pages.
OTHER_TIMING = DramTiming(latency=5, bytes_per_cycle=1, max_burst_beats=4, page_bytes=64)


def test_directed_and_random_programs_other_dram_timing(small_cfg_rtl):
    progs = directed(small_cfg_rtl) + [(f"random seed {s}", random_program(small_cfg_rtl, s)[0])
                                       for s in range(1000, 1000 + N_RANDOM_OTHER)]
    bad = compare(small_cfg_rtl, progs, OTHER_TIMING)
    assert not bad, "\n".join(bad[:20])


def test_random_programs_small_preset(small_cfg_rtl):
    progs = [(f"random seed {s}", random_program(small_cfg_rtl, s)[0]) for s in range(N_RANDOM)]
    bad = compare(small_cfg_rtl, progs)
    assert not bad, f"{len(bad)} of {N_RANDOM} differ:\n" + "\n".join(bad[:20])


#: The iCEBreaker's presets (``fpga.boards``): 1x4 on a 32-bit bus with one-entry command
#: queues (``_cq1``), and 1x1 on an 8-bit bus (an instruction is 16 beats, a uop or ACC
#: element 4, an INP, WGT or OUT element 1) with none (``_cq0``, the rendezvous).
ICEBREAKER = "1x4_i8w8a32_10_10_12_12_bus32_cq1"
NARROW = "1x1_i8w8a32_10_9_9_11_bus8_cq0"


def icebreaker_soc_timing(cfg) -> DramTiming:
    """The iCEBreaker SoC's memory (``fpga.soc.soc_dram_timing`` with the board's 4-beat bursts)."""
    return DramTiming(latency=2, bytes_per_cycle=cfg.bus_bytes, max_burst_beats=4)


@pytest.mark.parametrize("preset", [ICEBREAKER, NARROW])
@pytest.mark.parametrize("soc", [False, True], ids=["default", "soc"])
def test_icebreaker_presets(preset, soc):
    cfg = load_config(preset)
    timing = icebreaker_soc_timing(cfg) if soc else None
    assert cfg.CMD_QUEUE_DEPTH == {ICEBREAKER: 1, NARROW: 0}[preset]
    progs = directed(cfg) + [(f"random seed {s}", random_program(cfg, s)[0])
                             for s in range(N_RANDOM_OTHER)]
    progs = _without_the_deadlock(progs, timing)
    bad = compare(cfg, progs, timing)
    assert not bad, "\n".join(bad[:20])


def _without_the_deadlock(progs, timing):
    """``progs`` less the one the cycle model finds deadlocked, which must be "token queue
    fills": 35 token pushes in a row need the deep queues; with one-entry command queues
    (or none) fetch stalls behind the 34th LOAD, whose token has no room, and nothing
    reaches compute to pop one. The model says so; the RTL would hang."""
    deadlocked = []
    for name, prog in progs:
        try:
            cycle.run(prog, values=False, dram_timing=timing)
        except cycle.CycleDeadlockError:
            deadlocked.append(name)
    assert deadlocked == ["token queue fills"]
    return [(n, p) for n, p in progs if n not in deadlocked]


@pytest.mark.parametrize("timing", [None, OTHER_TIMING], ids=["default", "other"])
def test_rendezvous_small_preset(small_cfg_rtl, timing):
    """``CMD_QUEUE_DEPTH = 0``: no command queues, fetch hands each instruction to its idle
    module (``vta_hw.timing``); the small preset's programs, the timing differs from depth 1."""
    cfg = dataclasses.replace(small_cfg_rtl, CMD_QUEUE_DEPTH=0)
    progs = directed(cfg) + [(f"random seed {s}", random_program(cfg, s)[0])
                             for s in range(N_RANDOM_OTHER)]
    progs = _without_the_deadlock(progs, timing)
    one = cycle.TimingParams(cmd_queue_depth=1)
    differ = [n for n, p in progs if cycle.run(p, values=False, dram_timing=timing).cycles
              != cycle.run(p, values=False, dram_timing=timing, params=one).cycles]
    assert len(differ) > len(progs) // 2, differ
    bad = compare(cfg, progs, timing)
    assert not bad, "\n".join(bad[:20])


@pytest.mark.slow
@pytest.mark.parametrize("preset", [None, "1x8_i8w8a32_11_12_13_14", "2x16_i8w8a32_15_15_18_18",
                                    "1x32_i8w8a32_15_16_19_18_bus128"])
def test_default_and_other_presets(preset):
    cfg = load_config(preset)
    progs = directed(cfg) + [(f"random seed {s}", random_program(cfg, s, size="medium")[0])
                             for s in range(N_RANDOM_SLOW)]
    bad = compare(cfg, progs)
    assert not bad, "\n".join(bad[:20])
