"""Random programs (``sim.random_program``) on the RTL, 0 mismatches with ``sim.functional``.

CI: 200 small programs on the 1x4 preset in one simulator run, 40 on 1x4
under a second DRAM timing (slow memory, short bursts, small pages), and 60 on
each of the iCEBreaker's presets under its SoC's memory timing. Slow:
more and bigger programs on every preset, and two edge DRAM timings. The
cycle counts are recorded (``build/rtl/cycles``) and held to ``sim.cycle``.
"""
import pytest
from rtl_check import DEFAULT, MID, NARROW, SMALL, check

from sim import cycle
from sim.random_program import random_program
from vta_hw.config import load_config
from vta_hw.timing import DramTiming

SLOW_MEMORY = DramTiming(latency=9, bytes_per_cycle=1, max_burst_beats=4, page_bytes=256)


def _programs(cfg, seeds, size="small"):
    return [random_program(cfg, s, size=size)[0] for s in seeds]


def _run(rtl_config, preset, seeds, timing=None, size="small", tag="random"):
    timing = timing or DramTiming()
    cfg = rtl_config(preset, timing)
    progs = _programs(cfg, seeds, size)
    labels = [f"seed {s}" for s in seeds]
    results = check(cfg, [(p, None) for p in progs], labels, timing, tag=tag)
    return progs, results, timing


@pytest.fixture(scope="module")
def ci_random(rtl_config):
    return _run(rtl_config, SMALL, range(200))


def test_random_programs_small_preset(ci_random):
    progs, results, _ = ci_random
    assert len(results) == 200


def test_cycles_match_cycle_model(ci_random):
    """The RTL's CYCLES register equals ``sim.cycle`` for every program (run alone there)."""
    progs, results, timing = ci_random
    diffs = [(k, r.cycles, cycle.run(p, dram_timing=timing, values=False).cycles)
             for k, (p, r) in enumerate(zip(progs, results))]
    bad = [d for d in diffs if d[1] != d[2]]
    assert not bad, f"{len(bad)} programs: (seed, RTL cycles, sim.cycle cycles) {bad[:5]}"



@pytest.fixture(scope="module")
def slow_memory_random(rtl_config):
    return _run(rtl_config, SMALL, range(1000, 1040), SLOW_MEMORY, tag="random-slowmem")


def test_random_programs_other_dram_timing(slow_memory_random):
    progs, results, timing = slow_memory_random
    for p, r in zip(progs, results):
        assert r.cycles == cycle.run(p, dram_timing=timing, values=False).cycles


@pytest.mark.slow
@pytest.mark.parametrize("timing", [
    DramTiming(latency=1, bytes_per_cycle=64, max_burst_beats=1, page_bytes=64),
    DramTiming(latency=2, bytes_per_cycle=3, max_burst_beats=5, page_bytes=128)],
    ids=["lat1-single-beat", "odd-bandwidth"])
def test_random_programs_edge_timings(rtl_config, timing):
    progs, results, _ = _run(rtl_config, SMALL, range(2000, 2060), timing, tag="random-edge")
    for p, r in zip(progs, results):
        assert r.cycles == cycle.run(p, dram_timing=timing, values=False).cycles


@pytest.mark.slow
@pytest.mark.parametrize("preset,n,size", [(SMALL, 1000, "small"), (SMALL, 200, "medium"),
                                           (MID, 300, "small"), (MID, 300, "medium"),
                                           (DEFAULT, 100, "small"),
                                           ("2x16_i8w8a32_15_15_18_18", 60, "small"),
                                           ("1x32_i8w8a32_15_16_19_18_bus128", 40, "small")])
def test_random_programs_many(rtl_config, preset, n, size):
    progs, results, timing = _run(rtl_config, preset, range(5000, 5000 + n), size=size,
                                  tag=f"random-{size}-{n}")
    bad = [(k, r.cycles) for k, (p, r) in enumerate(zip(progs, results))
           if r.cycles != cycle.run(p, dram_timing=timing, values=False).cycles]
    assert not bad


#: The iCEBreaker's presets (``fpga.boards.ICE``, and 1x1 on an 8-bit bus; both with
#: one-entry command queues) under its SoC's memory timing (``fpga.soc.soc_dram_timing``:
#: latency 2, one beat a cycle, the board's 4-beat bursts).
ICE = "1x4_i8w8a32_10_10_12_12_bus32_cq1"


@pytest.mark.parametrize("preset", [ICE, NARROW])
def test_random_programs_icebreaker_presets(rtl_config, preset):
    """Values equal ``sim.functional`` and cycles equal ``sim.cycle`` with one-entry queues."""
    soc = DramTiming(latency=2, bytes_per_cycle=load_config(preset).bus_bytes, max_burst_beats=4)
    progs, results, timing = _run(rtl_config, preset, range(2000, 2060), soc, tag="random-ice")
    bad = [(k, r.cycles, cycle.run(p, dram_timing=timing, values=False).cycles)
           for k, (p, r) in enumerate(zip(progs, results))]
    bad = [b for b in bad if b[1] != b[2]]
    assert not bad, f"(program, RTL cycles, sim.cycle cycles) {bad[:5]}"
