"""``vta tune``: a tiny session on the digits CNN writes a log that `vta compile
--tuning-log` applies; --distill keeps the best records; bad input is one line."""
from __future__ import annotations

import json
from pathlib import Path

from tests.cli_util import run_cli

DIGITS = Path(__file__).resolve().parents[3] / "examples" / "digits" / "digits_cnn.onnx"


def test_tune_then_compile_with_the_log(tmp_path):
    log, plot = tmp_path / "t.jsonl", tmp_path / "t.png"
    r = run_cli("tune", DIGITS, "--trials", "2", "--threads", "1", "--quiet", "--no-graph-tuning",
                "-o", log, "--plot", plot)
    assert r.exit_code == 0, r.output
    assert "3 tasks to tune for llvm" in r.output
    assert "sum of tuned per-task times:" in r.output and "measured end-to-end latency" in r.output
    lines = log.read_text().splitlines()
    assert len(lines) == 6 and {json.loads(ln)["key"].split("(")[0] for ln in lines} == {
        "conv2d_nchw", "dense"}
    assert plot.read_bytes()[:4] == b"\x89PNG"
    best = tmp_path / "best.jsonl"
    r = run_cli("tune", log, "--distill", "-o", best)
    assert r.exit_code == 0 and "the best of 3 workloads" in r.output
    assert len(best.read_text().splitlines()) == 3
    r = run_cli("compile", DIGITS, "--tuning-log", best, "--quiet", "-o", tmp_path / "m.vtamod")
    assert r.exit_code == 0, r.output
    assert f"tuning: 3 of 3 tunable workloads covered by {best}" in r.output


def test_a_tuning_log_for_a_gpu_build_is_refused(tmp_path):
    r = run_cli("compile", DIGITS, "--target", "cuda", "--tuning-log", tmp_path / "t.jsonl",
                "-o", tmp_path / "m.vtamod")
    assert r.exit_code == 1 and "--tuning-log applies to LLVM targets and vta" in r.output


def test_a_missing_tuning_log_is_one_line(tmp_path):
    r = run_cli("compile", DIGITS, "--tuning-log", tmp_path / "none.jsonl", "--quiet",
                "-o", tmp_path / "m.vtamod")
    assert r.exit_code == 1 and "none.jsonl' does not exist" in r.output
    assert "Traceback" not in r.output


def test_distill_of_a_missing_log_is_an_error_and_writes_nothing(tmp_path):
    r = run_cli("tune", tmp_path / "none.jsonl", "--distill", "-o", tmp_path / "out.jsonl")
    assert r.exit_code == 1, r.output
    assert f"{tmp_path / 'none.jsonl'}: no such tuning log to distill" in r.output
    assert not (tmp_path / "out.jsonl").exists()


def test_a_damaged_tuning_log_line_is_one_clean_warning(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("garbage\n")
    r = run_cli("tune", bad, "--distill", "-o", tmp_path / "out.jsonl")
    assert r.exit_code == 0, r.output
    warn = [ln for ln in r.stderr.splitlines() if ln]
    assert len(warn) == 1 and warn[0].startswith(f"warning: {bad} line 1: skipped a line"), warn
    assert "TuningLogWarning" not in r.output and "warnings.warn" not in r.output


def test_tuning_log_help_names_every_target_it_applies_to():
    r = run_cli("compile", "--help")
    assert "LLVM targets and vta: apply, per workload" in " ".join(r.output.split())
