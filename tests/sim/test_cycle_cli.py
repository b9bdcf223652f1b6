"""``vta sim --model cycle``: report, JSON, Chrome trace and plot."""
from __future__ import annotations

import json


from tests.cli_util import run_cli as run
from sim import cycle
from vta_hw.program import Program


def test_json_report_and_check(gemm_files, tmp_path):
    prog, ref = gemm_files
    res = run("sim", prog, "--model", "cycle", "--json", "--check", ref,
              "--trace", tmp_path / "t.json", "--plot", tmp_path / "t.png")
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    assert report["model"] == "cycle" and report["check"]["ok"] is True
    assert report["cycles"] == cycle.run(Program.load(prog), values=False).cycles
    assert 0 < report["gemm_utilization"] < 1
    assert report["counters"]["gemm_uops"] > 0
    assert set(report["modules"]["load"]["stalls"]) == {"token", "memory", "queue_full"}
    events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    assert any(e["ph"] == "s" for e in events) and any(e["ph"] == "X" for e in events)
    assert (tmp_path / "t.png").stat().st_size > 1000


def test_text_report(gemm_files):
    res = run("sim", gemm_files[0], "--model", "cycle")
    assert res.exit_code == 0, res.output
    assert "cycle model" in res.output and "GEMM utilization" in res.output
    assert "stall token" in res.output


def test_trace_needs_the_cycle_model(gemm_files, tmp_path):
    res = run("sim", gemm_files[0], "--trace", tmp_path / "t.json")
    res = run("sim", gemm_files[0], "--model", "functional", "--trace", tmp_path / "t.json")
    assert res.exit_code == 2 and "--trace and --plot need --model cycle" in res.output
