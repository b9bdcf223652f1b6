"""``vta fpga list`` and ``vta fpga build`` argument errors (no tools run)."""
from __future__ import annotations

import json

from click.testing import CliRunner

from driver.cli.main import cli


def test_list_shows_boards_and_fitting_presets():
    r = CliRunner().invoke(cli, ["fpga", "list"])
    assert r.exit_code == 0, r.output
    for name in ("ulx3s-85f", "ecpix5-85", "icebreaker", "pynq-z1"):
        assert name in r.output
    assert "1x8_i8w8a32_11_12_13_14" in r.output
    d = json.loads(CliRunner().invoke(cli, ["fpga", "list", "--json"]).output)
    assert d["ulx3s-85f"]["fits"][-1] == "1x8_i8w8a32_11_12_13_14"
    assert d["icebreaker"]["fits"] == ["1x1_i8w8a32_10_9_9_11_bus8_cq0"]


def test_build_bad_board_lists_boards_and_exits_nonzero():
    r = CliRunner().invoke(cli, ["fpga", "build", "--board", "de10"])
    assert r.exit_code == 1
    assert "no board named 'de10'; boards: ulx3s-85f, ecpix5-85, icebreaker, pynq-z1" in r.output


def test_build_bad_preset_lists_presets_and_exits_nonzero():
    r = CliRunner().invoke(cli, ["fpga", "build", "--board", "ulx3s-85f", "--config", "2x2"])
    assert r.exit_code == 2     # a bad option value is a usage error, as for every --config
    assert "--config 2x2: no preset or config file named '2x2'; presets:" in r.output
    assert "1x8_i8w8a32_11_12_13_14" in r.output


def test_build_pynq_writes_the_vivado_project(tmp_path):
    r = CliRunner().invoke(cli, ["fpga", "build", "--board", "pynq-z1", "--config",
                                 "1x4_i8w8a32_10_10_10_11_bus32", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "Vivado" in r.output and (tmp_path / "top.tcl").exists()


def test_build_seeds_below_one_is_a_usage_error():
    r = CliRunner().invoke(cli, ["fpga", "build", "--board", "icebreaker", "--seeds", "0"])
    assert r.exit_code == 2
    assert "Invalid value for '--seeds': 0 is not in the range x>=1" in r.output
