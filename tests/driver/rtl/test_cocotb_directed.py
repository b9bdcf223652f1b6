"""Directed programs on the RTL (Verilator + cocotb) against ``sim.functional``.

Every instruction kind, every padding side of INP/WGT/ACC loads, negative
immediates, uop rows that start mid-beat, DMA rows of many bursts across a
page boundary. All programs of a preset run in one simulator invocation,
back to back without reset. CI runs the 1x4, 1x8 and 8-bit-bus presets; the default
1x16 and the larger presets (Verilator builds of minutes) are ``slow``.
"""
import pytest
from rtl_check import DEFAULT, MID, NARROW, SMALL, check
from rtl_programs import DIRECTED

NAMES = sorted(DIRECTED)


@pytest.fixture(scope="module")
def directed_results(rtl_config):
    cache = {}

    def get(preset):
        if preset not in cache:
            cfg = rtl_config(preset)
            jobs = [(DIRECTED[n](cfg), None) for n in NAMES]
            cache[preset] = dict(zip(NAMES, check(cfg, jobs, NAMES, tag="directed")))
        return cache[preset]

    return get


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("preset", [SMALL, MID, NARROW])
def test_directed(directed_results, preset, name):
    r = directed_results(preset)[name]
    assert r.cycles > 0 and r.busy["fetch"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("preset", [DEFAULT, "2x16_i8w8a32_15_15_18_18",
                                    "1x32_i8w8a32_15_16_19_18_bus128"])
def test_directed_big_presets(rtl_config, preset):
    cfg = rtl_config(preset)
    check(cfg, [(DIRECTED[n](cfg), None) for n in NAMES], NAMES, tag="directed")
