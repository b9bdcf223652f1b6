"""Report parsing (nextpnr's JSON and log) and the PLL settings, without running tools."""
from __future__ import annotations

import json

import pytest

from fpga import report as R
from fpga.boards import BOARDS, SMALL
from fpga.pll import ecp5_pll, ice40_pll, xilinx_mmcm
from vta_hw.config import load_config


@pytest.mark.parametrize("fn, fin, fout, vco", [
    (ecp5_pll, 25e6, 50e6, (400e6, 800e6)),
    (ecp5_pll, 100e6, 75e6, (400e6, 800e6)),
    (ice40_pll, 12e6, 24e6, (533e6, 1066e6)),
    (xilinx_mmcm, 125e6, 100e6, (600e6, 1200e6)),
])
def test_pll_hits_the_clock_within_its_ranges(fn, fin, fout, vco):
    got, p = fn(fin, fout)
    assert abs(got - fout) <= 0.01 * fout
    if fn is ecp5_pll:
        v = fin / p["CLKI_DIV"] * p["CLKFB_DIV"] * p["CLKOP_DIV"]
    elif fn is ice40_pll:
        v = fin / (p["DIVR"] + 1) * (p["DIVF"] + 1)
    else:
        v = fin * p["CLKFBOUT_MULT_F"] / p["DIVCLK_DIVIDE"]
    assert vco[0] <= v <= vco[1]


def test_pll_refuses_an_unreachable_clock():
    with pytest.raises(ValueError, match="cannot make 900 MHz from 25 MHz"):
        ecp5_pll(25e6, 900e6)


def test_report_from_nextpnr_json(tmp_path):
    npr = {"utilization": {"TRELLIS_COMB": {"used": 9000, "available": 83640},
                           "TRELLIS_FF": {"used": 4000, "available": 83640},
                           "MULT18X18D": {"used": 16, "available": 156},
                           "DP16KD": {"used": 20, "available": 208}},
           "fmax": {"clk25_0__i": {"achieved": 180.0, "constraint": 25.0},
                    "soc.clk": {"achieved": 61.5, "constraint": 50.0}}}
    (tmp_path / "r.json").write_text(json.dumps(npr))
    rep = R.make_report(board=BOARDS["ulx3s-85f"], cfg=load_config(SMALL), clock_mhz=50.0,
                        nextpnr_json=tmp_path / "r.json", stat_json=None, build_s={})
    assert rep["resources"]["LUT"] == {"used": 9000, "total": 83640, "percent": 10.8}
    assert rep["fmax_mhz"] == 61.5 and rep["timing_met"] and rep["fits"]
    assert rep["peak_gops"] == 2 * 16 * 50 / 1000


def test_overflow_found_in_the_log_when_placement_fails(tmp_path):
    log = ("Info: Device utilisation:\nInfo: \t         ICESTORM_LC: 18673/ 5280   353%\n"
           "Info: \t        ICESTORM_RAM:    58/   30   193%\nInfo: \t        ICESTORM_DSP:     "
           "0/    8     0%\n")
    (tmp_path / "top.tim").write_text(log)
    (tmp_path / "stat.json").write_text(json.dumps(
        {"design": {"num_cells_by_type": {"SB_DFF": 10, "SB_DFFE": 5, "SB_LUT4": 99}}}))
    rep = R.make_report(board=BOARDS["icebreaker"], cfg=load_config(SMALL), clock_mhz=12.0,
                        nextpnr_json=tmp_path / "missing.json", stat_json=tmp_path / "stat.json",
                        build_s={}, nextpnr_log=tmp_path / "top.tim")
    assert rep["overflow"] == ["LUT", "BRAM"] and not rep["fits"]
    assert rep["resources"]["FF"]["used"] == 15
    assert rep["resources"]["SPRAM"] == {"used": 0, "total": 4, "percent": 0.0}
