"""Xilinx resource estimates from Yosys's synth_xilinx (``fpga.xilinx_estimate``).

``data/xc7_1x4_yosys_stat.json`` and ``data/xcup_1x4_yosys_stat.json`` are Yosys 0.70's
``stat -json`` after ``fpga.xilinx_estimate.yosys_script("xc7" / "xcup")`` on the SoC with
preset ``1x4_i8w8a32_10_10_10_11_bus32`` (``SMALL``).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from fpga import xilinx_estimate as X
from fpga.boards import SMALL, TINY

STAT = json.loads((Path(__file__).parent / "data" / "xc7_1x4_yosys_stat.json").read_text())


def test_cells_counted_from_real_yosys_output():
    counts = X.count_cells(STAT)
    # LUT2..LUT6: 1308 + 1402 + 1074 + 1069 + 890 = 5743; LUTs as memory: 75 RAM32M and
    # 43 RAM64M at 4 LUTs each = 472; 5743 + 472 = 6215
    assert counts["LUTRAM"] == 472 and counts["LUT"] == 6215
    assert counts["FF"] == 2868 + 9            # FDRE + FDSE
    assert counts["DSP"] == 20                 # DSP48E1
    assert counts["BRAM36"] == 68 + 3 * 0.5    # RAMB36E1 + RAMB18E1 as halves


def test_ultrascale_plus_cells_counted_from_real_yosys_output():
    stat = json.loads((Path(__file__).parent / "data" / "xcup_1x4_yosys_stat.json").read_text())
    counts = X.count_cells(stat)
    # LUT2..LUT6: 1208 + 1385 + 927 + 1238 + 966 = 5724; UltraScale+ LUT RAMs: 36 RAM32M16
    # and 19 RAM64M8 at 8 LUTs each = 440; 5724 + 440 = 6164
    assert counts["LUTRAM"] == 440 and counts["LUT"] == 6164
    assert counts["FF"] == 3541 + 9 and counts["DSP"] == 20     # DSP48E2
    assert counts["BRAM36"] == 68 + 3 * 0.5                      # RAMB36E2 + RAMB18E2 / 2


def test_counts_against_the_xc7z020():
    est = X.against(X.get_part("XC7Z020"), X.count_cells(STAT), SMALL)
    assert est["label"] == "Yosys synth_xilinx estimate (no Vivado place & route)"
    assert est["resources"]["LUT"] == {"used": 6215, "total": 53200, "percent": 11.7}
    assert est["resources"]["BRAM36"] == {"used": 69.5, "total": 140, "percent": 49.6}
    assert est["fits"] and est["overflow"] == []
    table = X.table([est])
    assert table.splitlines()[0] == X.LABEL + ":"
    assert "xc7z020" in table and "6,215 12%" in table and "69.5 50%" in table, table


def test_a_design_over_the_part_names_what_overflows():
    counts = {"LUT": 80_000, "LUTRAM": 0, "FF": 1, "DSP": 400, "BRAM36": 10}
    est = X.against(X.PARTS["xczu3eg"], counts, "big")
    assert not est["fits"] and est["overflow"] == ["LUT", "DSP"]
    assert X.against(X.PARTS["xczu7ev"], counts, "big")["fits"]


def test_unknown_part_lists_the_parts():
    with pytest.raises(X.XilinxEstimateError, match=r"no Xilinx part named 'xc7a35t'; parts: "
                       r"xc7z020 \(PYNQ-Z1, PYNQ-Z2\), xczu3eg \(Ultra96\), xczu7ev \(ZCU104\)"):
        X.get_part("xc7a35t")


def test_estimates_are_cached_per_preset_and_family_until_the_rtl_changes(tmp_path, monkeypatch):
    """Yosys is replaced by the recorded stat output and the elaboration by a fixed text:
    what is tested is when Yosys runs."""
    runs, rtl = [], {"text": "module \\soc\nend\n"}

    def fake_synth(family, work, log):
        runs.append(family)
        assert (work / "soc.il").read_text() == rtl["text"]
        return STAT
    monkeypatch.setattr(X, "_synthesize", fake_synth)
    monkeypatch.setattr(X, "_soc_rtlil", lambda cfg: rtl["text"])
    first = X.estimate("xc7z020", TINY, cache_dir=tmp_path, log=lambda s: None)
    assert not first["cached"] and runs == ["xc7"]
    again = X.estimate("xc7z020", TINY, cache_dir=tmp_path, log=lambda s: None)
    assert again["cached"] and runs == ["xc7"] and again["resources"] == first["resources"]
    X.estimate("xczu3eg", TINY, cache_dir=tmp_path, log=lambda s: None)    # another family
    X.estimate("xczu7ev", TINY, cache_dir=tmp_path, log=lambda s: None)    # the same family
    X.estimate("xc7z020", SMALL, cache_dir=tmp_path, log=lambda s: None)   # another preset
    assert runs == ["xc7", "xcup", "xc7"]
    rtl["text"] = "module \\soc\n  wire \\x\nend\n"                   # the RTL changed
    assert not X.estimate("xc7z020", TINY, cache_dir=tmp_path, log=lambda s: None)["cached"]
    X.estimate("xc7z020", TINY, refresh=True, cache_dir=tmp_path, log=lambda s: None)
    assert runs == ["xc7", "xcup", "xc7", "xc7", "xc7"]
    # the cache, read without elaborating: each family's counts against each of its parts
    assert [(r["part"], r["preset"]) for r in X.cached(tmp_path)] == [
        ("xc7z020", SMALL), ("xc7z020", TINY), ("xczu3eg", TINY), ("xczu7ev", TINY)]


def test_cli_list_shows_cached_estimates_with_their_label(tmp_path, monkeypatch):
    from driver.cli.main import cli
    monkeypatch.setattr(X, "CACHE_DIR", tmp_path)
    r = CliRunner().invoke(cli, ["fpga", "list"])
    assert r.exit_code == 0, r.output
    assert "Yosys synth_xilinx estimate (no Vivado place & route): none cached" in r.output
    work = tmp_path / "xc7" / SMALL
    work.mkdir(parents=True)
    (work / "estimate.json").write_text(json.dumps(
        {"preset": SMALL, "family": "xc7", "sha256": "", "synth_s": 60.0,
         "counts": X.count_cells(STAT)}))
    r = CliRunner().invoke(cli, ["fpga", "list"])
    assert r.exit_code == 0, r.output
    assert "Yosys synth_xilinx estimate (no Vivado place & route):" in r.output
    row = next(line for line in r.output.splitlines() if line.strip().startswith("xc7z020"))
    assert SMALL in row and "6,215 12%" in row and row.endswith("yes"), row


def test_cli_estimate_unknown_part_exits_1_before_any_work():
    from driver.cli.main import cli
    r = CliRunner().invoke(cli, ["fpga", "estimate", "--part", "xc7a35t", "--config", SMALL])
    assert r.exit_code == 1
    assert "no Xilinx part named 'xc7a35t'; parts: xc7z020 (PYNQ-Z1, PYNQ-Z2)" in r.output


@pytest.mark.slow
def test_smallest_preset_synthesized_for_the_xc7z020(tmp_path):
    est = X.estimate("xc7z020", SMALL, cache_dir=tmp_path, log=lambda s: None)
    res = est["resources"]
    assert not est["cached"] and est["fits"], est
    # the 1x4 SoC: thousands of LUTs and FFs, its 16 MACs and the ALU's multipliers in
    # DSP48E1s, its SRAMs and the 256 KiB memory in block RAM (the memory alone is 64 RAMB36:
    # 4 KiB of data each)
    assert 2000 < res["LUT"]["used"] < 20000 and 1000 < res["FF"]["used"] < 10000, res
    assert res["DSP"]["used"] >= 16 and res["BRAM36"]["used"] >= 64, res
    assert X.estimate("xc7z020", SMALL, cache_dir=tmp_path, log=lambda s: None)["cached"]


@pytest.mark.parametrize("part, code", [("xczu3eg", 0), ("xc7z020", 1)])
def test_cli_estimate_prints_the_labelled_table_and_exits_1_when_over(monkeypatch, part, code):
    """The estimate itself (Yosys) is replaced: what is tested is the command's output and exit."""
    from driver.cli.main import cli
    counts = {"LUT": 20_730, "LUTRAM": 0, "FF": 8_249, "DSP": 272, "BRAM36": 201}  # the 1x16
    monkeypatch.setattr(X, "estimate", lambda p, preset, **kw: {
        **X.against(X.get_part(p), counts, preset), "cached": True, "synth_s": 1.0})
    r = CliRunner().invoke(cli, ["fpga", "estimate", "--part", part, "--config", SMALL])
    assert r.exit_code == code, r.output
    assert r.output.startswith("Yosys synth_xilinx estimate (no Vivado place & route):\n")
    if code:
        assert (f"Error: {SMALL} does not fit xc7z020 (PYNQ-Z1, PYNQ-Z2) by this estimate: "
                "DSP, BRAM36 over; try a smaller preset") in r.output
