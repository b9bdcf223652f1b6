"""The slowest path in words, from real nextpnr reports.

``data/icebreaker_1x1_nextpnr_report.json`` is the ``--report`` of ``vta fpga build --board
icebreaker`` (preset ``1x1_i8w8a32_10_9_9_11_bus8_cq0``, 12 MHz, nextpnr's default seed):
20.78 MHz, i.e. a 48.11 ns path; ``data/ulx3s_1x4_nextpnr_report.json`` that of ``--board
ulx3s-85f`` (``1x4_i8w8a32_10_10_10_11_bus32``, 50 MHz, default seed): 55.30 MHz. Source
paths in both are made relative.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from fpga import critical_path as C
from fpga import report as R

DATA = Path(__file__).parent / "data"
REPORT = json.loads((DATA / "icebreaker_1x1_nextpnr_report.json").read_text())


def test_the_soc_clock_path_in_words():
    fmax, clock = R.clock_fmax(REPORT, 12.0)
    assert clock == "cd_sync.clk" and round(fmax, 2) == 20.78
    cp = C.describe(REPORT, clock)
    # launched by the forwarding flag's copy, through the multiplier's operand select and the
    # ALU's MAX comparison (a carry chain), captured by the core's last-write register
    assert cp["from"] == "soc.vta.compute.core.fwd5b_dup0"
    assert cp["to"] == "soc.vta.compute.core.last_w"
    assert cp["through"] == ["soc.vta.compute.core.mul", "soc.vta.compute.core.alu",
                             "soc.vta.compute.core"]
    assert cp["logic_levels"] == 12
    # the whole path is the clock period at Fmax: 1000 / 20.78 MHz = 48.1 ns
    assert cp["delay_ns"] == pytest.approx(1000 / fmax, abs=0.01)
    assert cp["logic_ns"] + cp["routing_ns"] < cp["delay_ns"]   # plus clock-to-Q and setup
    assert cp["text"] == (
        "from soc.vta.compute.core.fwd5b_dup0 (FF) through soc.vta.compute.core.mul, "
        "soc.vta.compute.core.alu, soc.vta.compute.core (12 logic levels: 12.5 ns logic, "
        "33.0 ns routing) to soc.vta.compute.core.last_w (FF), 48.1 ns")


def test_an_ecp5_path_in_words():
    """ECP5 names: ``_TRELLIS_FF_Q``, ``_LUT4_Z``, ``PFUMX``/``L6MUX21`` wide multiplexers; the
    capturing flip-flop is the block RAM's registered write data (named after its DIB1 pin)."""
    report = json.loads((DATA / "ulx3s_1x4_nextpnr_report.json").read_text())
    fmax, clock = R.clock_fmax(report, 50.0)
    assert clock == "$glbnet$clk" and round(fmax, 2) == 55.30
    cp = C.describe(report, clock)
    assert cp["from"] == "soc.vta.compute.core.fwd5b_dup2"
    assert cp["to"] == "soc.vta.compute.out_sram.0.0_DIB1"
    assert cp["through"] == ["soc.vta.compute.core.mul", "soc.vta.compute.core.alu",
                             "soc.vta.compute.out_sram.0"]
    assert cp["logic_levels"] == 13
    assert cp["delay_ns"] == pytest.approx(1000 / fmax, abs=0.01)   # 18.08 ns


def test_paths_of_other_clocks_are_not_the_soc_clocks():
    assert C.describe(REPORT, "no_such_clock") is None
    assert C.describe({"fmax": {}}, "cd_sync.clk") is None
    assert C.describe(REPORT, None) is None


@pytest.mark.parametrize("cell, reg, unit", [
    ("soc.vta.compute.core.last_w_SB_DFFSR_Q_2_DFFLC", "soc.vta.compute.core.last_w",
     "soc.vta.compute.core"),
    ("soc.vta.compute.core.alu.max_dup0_SB_LUT4_I0_I3_SB_CARRY_CO_CI",
     "soc.vta.compute.core.alu.max_dup0", "soc.vta.compute.core.alu"),
    ("soc.bridge.status_TRELLIS_FF_Q_1", "soc.bridge.status", "soc.bridge"),
    ("soc.vta.core.sum_LUT4_Z_3", "soc.vta.core.sum", "soc.vta.core"),
    ("soc.ram.rdata[7]", "soc.ram.rdata", "soc.ram"),
    ("$abc$4301$auto$blifparse.cc:396:parse_blif$4410",
     "$abc$4301$auto$blifparse.cc:396:parse_blif$4410", None),
])
def test_cell_names_map_to_the_amaranth_hierarchy(cell, reg, unit):
    assert C.register(cell) == reg
    assert C.unit(cell) == unit


def test_the_report_and_its_summary_carry_the_path(tmp_path):
    from fpga.boards import BOARDS
    from vta_hw.config import load_config
    board = BOARDS["icebreaker"]
    (tmp_path / "r.json").write_text(json.dumps(REPORT))
    rep = R.make_report(board=board, cfg=load_config(board.smallest), clock_mhz=12.0,
                        nextpnr_json=tmp_path / "r.json", stat_json=None, build_s={})
    assert rep["critical_path"]["to"] == "soc.vta.compute.core.last_w"
    assert "slowest path: from soc.vta.compute.core.fwd5b_dup0 (FF)" in R.summary(rep)
