"""The ``vta`` command line: help, version, info, example, disasm, sim and its errors."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from tests.cli_util import run_cli as run
from vta_hw.config import preset_names


def test_help_lists_commands():
    res = run("--help")
    assert res.exit_code == 0
    for cmd in ("info", "disasm", "sim", "example"):
        assert cmd in res.output


def test_version():
    res = run("--version")
    assert res.exit_code == 0 and res.output.startswith("vta, version ")


def test_info_reports_config_and_tools():
    res = run("info", "--json")
    assert res.exit_code == 0, res.output
    info = json.loads(res.output)
    assert info["config"] == "1x16_i8w8a32_15_15_18_17"
    assert info["derived"]["inp_depth"] == 2048
    assert set(info["tools"]) >= {"LLVM", "Verilator", "Yosys", "nextpnr-ecp5", "nvcc"}
    assert info["tools"]["LLVM"].startswith("LLVM ")


def test_info_text_marks_missing_tools(monkeypatch):
    monkeypatch.setattr("driver.cli.info.TOOLS", {"NoSuchTool": (["no-such-tool-xyz"], "-v")})
    res = run("info", "--config", "1x8_i8w8a32_11_12_13_14")
    assert res.exit_code == 0, res.output
    assert "config: 1x8_i8w8a32_11_12_13_14" in res.output
    assert "NoSuchTool" in res.output and "not found" in res.output


def test_unknown_preset_is_a_clear_error(tmp_path):
    """every command's --config names the option and the value: a usage error (exit 2)"""
    digits = "examples/digits/digits_cnn.onnx"
    for cmd in (["info"], ["example", "gemm", "-o", tmp_path / "g.vtaprog"],
                ["tune", digits, "--target", "vta", "-o", tmp_path / "t.jsonl"],
                ["compile", digits, "--target", "vta", "-o", tmp_path / "m.vtamod"]):
        res = run(*cmd, "--config", "9x9_nope")
        assert res.exit_code == 2, (cmd, res.output)
        assert "Error: --config 9x9_nope: no preset or config file named '9x9_nope'" in res.output
        assert "1x16_i8w8a32_15_15_18_17" in res.output  # lists the presets
        assert "Traceback" not in res.output
    assert not list(tmp_path.iterdir())


def test_cycle_model_json_fills_every_counter_the_functional_model_does(gemm_files):
    """no empty dicts or zero steps standing in for counts the cycle model did not make"""
    cyc = json.loads(run("sim", gemm_files[0], "--json").output)["counters"]
    fun = json.loads(run("sim", gemm_files[0], "--model", "functional", "--json").output)
    assert cyc == fun["counters"]
    assert cyc["steps"] > 0 and cyc["insns_by_module"] and cyc["tokens_pushed"]


def test_sim_checks_example_against_numpy(gemm_files):
    prog, ref = gemm_files
    res = run("sim", prog, "--check", ref, "--json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    assert report["check"]["ok"] is True
    c = report["counters"]
    assert c["gemm_uops"] > 0 and c["alu_uops"] > 0
    assert report["leftover_tokens"] == {}


def test_sim_check_fails_on_wrong_reference(gemm_files, tmp_path):
    prog, ref = gemm_files
    with np.load(ref) as r:
        wrong = r["C"].copy()
    wrong.flat[0] ^= 1
    bad = tmp_path / "bad.npz"
    np.savez(bad, C=wrong)
    res = run("sim", prog, "--check", bad)
    assert res.exit_code == 1
    assert "buffer C: 1 of" in res.output


def test_sim_text_report(gemm_files):
    res = run("sim", gemm_files[0])
    assert res.exit_code == 0, res.output
    assert "cycle model" in res.output and "cycles" in res.output
    res = run("sim", gemm_files[0], "--model", "functional")
    assert "functional model" in res.output and "gemm_uops" in res.output
    assert "not timed" in res.output and "0 cycles" not in res.output
    report = json.loads(run("sim", gemm_files[0], "--model", "functional", "--json").output)
    assert report["cycles"] is None


def test_disasm_one_line_per_instruction(gemm_files):
    from vta_hw.program import Program
    prog = Program.load(gemm_files[0])
    res = run("disasm", gemm_files[0], "--uops")
    assert res.exit_code == 0, res.output
    lines = [ln for ln in res.output.splitlines() if ln and not ln.startswith((";", "uop"))]
    assert len(lines) == len(prog.insns)
    assert lines[0].split()[1] == "LOAD" and lines[-1].split()[1] == "FINISH"
    assert sum(ln.startswith("uop") for ln in res.output.splitlines()) == len(prog.uops)


def test_truncated_program_is_a_clear_error(gemm_files, tmp_path):
    data = gemm_files[0].read_bytes()
    cut = tmp_path / "cut.vtaprog"
    cut.write_bytes(data[: len(data) - 10])
    for cmd in ("sim", "disasm"):
        res = run(cmd, cut)
        assert res.exit_code == 1
        assert "truncated" in res.output and "Traceback" not in res.output


def test_not_a_program_file(tmp_path):
    f = tmp_path / "x.vtaprog"
    f.write_text("hello")
    res = run("sim", f)
    assert res.exit_code == 1 and "not a VTA program file" in res.output


def test_example_rejects_bad_shape(tmp_path):
    res = run("example", "gemm", "-o", tmp_path / "g.vtaprog", "-k", "30")
    assert res.exit_code == 1
    assert "k=30 must be a positive multiple of BLOCK=16" in res.output
    assert not (tmp_path / "g.vtaprog").exists()


@pytest.mark.parametrize("preset", preset_names())
def test_example_runs_on_every_preset(preset, tmp_path):
    out = tmp_path / "g.vtaprog"
    assert run("example", "gemm", "--config", preset, "-o", out).exit_code == 0
    res = run("sim", out, "--check", tmp_path / "g.expected.npz")
    assert res.exit_code == 0, res.output


def test_console_script_entry_point():
    res = subprocess.run([sys.executable, "-c", "from driver.cli import main; main()", "--help"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "Usage: vta" in res.stdout
