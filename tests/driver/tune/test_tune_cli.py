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
    assert "(CPU, preset or GPU device; others keep the default)" in " ".join(r.output.split())


def test_tune_transfers_from_another_preset_s_log(tmp_path, monkeypatch):
    from compiler.autotune import search
    seen = []
    real = search.XGBSearch.pretrain
    monkeypatch.setattr(search.XGBSearch, "pretrain", lambda self, records, tasks: (
        seen.append(self), real(self, records, tasks)))
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    r = run_cli("tune", DIGITS, "--target", "vta", "--trials", "3", "--quiet", "-o", first)
    assert r.exit_code == 0, r.output
    r = run_cli("tune", DIGITS, "--target", "vta", "--config", "1x8_i8w8a32_11_12_13_14",
                "--trials", "3", "--transfer-log", first, "--quiet", "-o", second)
    assert r.exit_code == 0, r.output
    # the 1x16 preset's six records (two workloads) pre-trained the 1x8 session's model,
    # which then learnt the session's own six trials
    assert seen[-1].models["vta_conv2d"].samples == 6 + 6
    assert all("1x8_i8w8a32" in json.loads(ln)["key"] for ln in second.read_text().splitlines())


def test_a_missing_transfer_log_is_one_line(tmp_path):
    r = run_cli("tune", DIGITS, "--transfer-log", tmp_path / "none.jsonl", "-o", tmp_path / "o.jsonl")
    assert r.exit_code == 2 and "none.jsonl' does not exist" in r.output
    assert "Traceback" not in r.output
