"""``vta tune``: a tiny session on the digits CNN writes a log that `vta compile
--tuning-log` applies; --distill keeps the best records; bad input is one line."""
from __future__ import annotations

import json
import re
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
    assert re.search(r"time: finding the tasks [\d.]+ s, search and checks [\d.]+ s, tuned "
                     r"build and latency [\d.]+ s\n", r.output), r.output
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
    assert f"tuning: 3 of 3 tunable workloads covered: 3 by {best}\n" in r.output


def test_a_missing_tuning_log_is_one_line(tmp_path):
    r = run_cli("compile", DIGITS, "--tuning-log", tmp_path / "none.jsonl", "--quiet",
                "-o", tmp_path / "m.vtamod")
    assert r.exit_code == 1 and r.output == (f"Error: --tuning-log {tmp_path / 'none.jsonl'}: "
                                             "does not exist; write one with `vta tune MODEL -o "
                                             "LOG`\n")


def test_distill_of_a_missing_log_is_an_error_and_writes_nothing(tmp_path):
    r = run_cli("tune", tmp_path / "none.jsonl", "--distill", "-o", tmp_path / "out.jsonl")
    assert r.exit_code == 1, r.output
    assert f"{tmp_path / 'none.jsonl'}: no such tuning log to distill" in r.output
    assert not (tmp_path / "out.jsonl").exists()


def test_a_damaged_tuning_log_line_is_one_clean_warning(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("garbage\n" + _record_line("conv2d_nchw(a)"))
    r = run_cli("tune", bad, "--distill", "-o", tmp_path / "out.jsonl")
    assert r.exit_code == 0, r.output
    warn = [ln for ln in r.stderr.splitlines() if ln]
    assert len(warn) == 1 and warn[0].startswith(f"warning: {bad} line 1: skipped a line"), warn
    assert "TuningLogWarning" not in r.output and "warnings.warn" not in r.output


def _record_line(key: str, target=None, config=None) -> str:
    from compiler.autotune.record import Record
    return Record(key, target or {"target": "llvm"}, config or {}, [1.0]).to_json() + "\n"


def test_tune_never_writes_to_a_file_that_is_not_a_tuning_log(tmp_path):
    """-o naming the model (or any non-log) is refused before any work; the file is intact"""
    model = tmp_path / "digits_cnn.onnx"
    model.write_bytes(DIGITS.read_bytes())
    npz = tmp_path / "data.npz"
    npz.write_bytes(b"PK\x03\x04 not a log")
    for args, out in (((DIGITS, "--trials", "1", "--quiet"), model),
                      ((DIGITS, "--trials", "1", "--quiet"), npz),
                      ((_log(tmp_path), "--distill"), model)):
        before = out.read_bytes()
        r = run_cli("tune", *args, "-o", out)
        assert r.exit_code == 1, r.output
        assert f"Error: -o/--output {out}: not a tuning log (its first line is not a tuning " \
               "record" in r.output
        assert f"name a new log, e.g. -o {out.with_suffix('.jsonl')}" in r.output
        assert "Traceback" not in r.output and "task" not in r.output
        assert out.read_bytes() == before


def _log(tmp_path: Path) -> Path:
    log = tmp_path / "some.jsonl"
    log.write_text(_record_line("conv2d_nchw(a)"))
    return log


def test_a_tuning_log_that_holds_no_record_is_an_error_before_work(tmp_path):
    heldout = DIGITS.parent / "heldout.npz"
    r = run_cli("compile", DIGITS, "--tuning-log", heldout, "--quiet", "-o", tmp_path / "m.vtamod")
    assert r.exit_code == 1, r.output
    assert r.output.startswith(f"Error: --tuning-log {heldout}: not a tuning log (no line is a "
                               "tuning record")
    assert "warning" not in r.output and not (tmp_path / "m.vtamod").exists()
    r = run_cli("tune", DIGITS, "--transfer-log", heldout, "--quiet", "-o", tmp_path / "t.jsonl")
    assert r.exit_code == 1, r.output
    assert r.output.startswith(f"Error: --transfer-log {heldout}: not a tuning log (no line is "
                               "a tuning record")
    assert not (tmp_path / "t.jsonl").exists()


def test_a_log_for_other_shapes_says_why_it_covers_nothing(tmp_path):
    """records of the model's op kinds, all for batch 1, compiled at batch 2: the report
    names the kinds and the fix"""
    from compiler.autotune import extract_tasks
    from compiler.autotune.record import target_record
    from compiler.codegen.llvm.target import parse_target
    log = tmp_path / "b1.jsonl"
    tgt = target_record(parse_target("llvm"))
    log.write_text("".join(_record_line(t.key, tgt) for t in extract_tasks(DIGITS, "llvm")))
    r = run_cli("compile", DIGITS, "--tuning-log", log, "--input-shape", "image:2x1x8x8",
                "--quiet", "-o", tmp_path / "m.vtamod")
    assert r.exit_code == 0, r.output
    assert f"tuning: 0 of 3 tunable workloads covered: 0 by {log}\n" in r.output
    assert "tuning: the log's conv2d_nchw, dense records are for other shapes: tune with the " \
           "same --input-shape" in r.output
    r = run_cli("compile", DIGITS, "--tuning-log", log, "--quiet", "-o", tmp_path / "n.vtamod")
    assert r.exit_code == 0 and "for other shapes" not in r.output, r.output


def test_a_log_for_another_preset_says_so_and_gets_no_credit(tmp_path):
    """records of the digits CNN's accelerator workloads on the 1x8 preset, compiled for the
    default preset: the shipped log covers the build, the report credits it, not the given
    log, and names the log's preset and the fix"""
    from compiler.autotune import extract_tasks
    other = "1x8_i8w8a32_11_12_13_14"
    log = tmp_path / "vta8.jsonl"
    log.write_text("".join(_record_line(t.key, t.target, {"tiling": list(t.space.default.values[0][1])})
                           for t in extract_tasks(DIGITS, "vta", vta_config=other)))
    r = run_cli("compile", DIGITS, "--target", "vta", "--tuning-log", log, "--quiet",
                "-o", tmp_path / "m.vtamod")
    assert r.exit_code == 0, r.output
    assert re.search(rf"tuning: 2 of 2 tunable workloads covered: 0 by {re.escape(str(log))}, "
                     r"2 by \S+vta_1x16_i8w8a32_15_15_18_17.jsonl\n", r.output), r.output
    assert (f"tuning: {log} holds records for vta --config {other} only; this build is for vta "
            "--config 1x16_i8w8a32_15_15_18_17: compile for the log's target") in r.output
    assert "other shapes" not in r.output


def test_tune_names_every_valid_target_and_the_option(tmp_path):
    r = run_cli("tune", DIGITS, "--target", "tpu", "-o", tmp_path / "t.jsonl")
    assert r.exit_code == 2, r.output
    for word in ("--target 'tpu': unknown target", "llvm", "cuda", "opencl", "vta"):
        assert word in r.output
    assert not (tmp_path / "t.jsonl").exists()


def test_one_trial_is_singular(tmp_path):
    r = run_cli("tune", DIGITS, "--target", "vta", "--trials", "1", "--strategy", "random",
                "--quiet", "-o", tmp_path / "t.jsonl")
    assert r.exit_code == 0, r.output
    assert "(1 trial)" in r.output and "(1 trials)" not in r.output


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
    assert r.exit_code == 1 and f"--transfer-log {tmp_path / 'none.jsonl'}: does not exist; " \
                                "write one with `vta tune MODEL -o LOG`" in r.output
    assert "Traceback" not in r.output


def test_a_siblings_records_are_credited_to_its_cpu(tmp_path):
    """records of the digits CNN tuned on znver1 (the default points), compiled for znver2
    (same ISA class, AVX2 256-bit): the report credits the log and names znver1 and the class"""
    from compiler.autotune import extract_tasks
    log = tmp_path / "znver1.jsonl"
    log.write_text("".join(_record_line(t.key, t.target, dict(t.space.default.values))
                           for t in extract_tasks(DIGITS, "llvm -mcpu=znver1")))
    r = run_cli("compile", DIGITS, "--target", "llvm -mcpu=znver2", "--tuning-log", log,
                "--quiet", "-o", tmp_path / "m.vtamod")
    assert r.exit_code == 0, r.output
    assert (f"tuning: 3 of 3 tunable workloads covered: 3 by {log}; 3 from znver1 (same ISA "
            "class: avx2, 256-bit)\n") in r.output
