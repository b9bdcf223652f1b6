"""The tuning log: JSON lines, appended per trial, damaged or foreign lines skipped with a
warning naming the file and line, distilled to the best record per workload."""
from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

from compiler.autotune.record import (FORMAT_VERSION, MAX_LINE_WARNINGS, NotATuningLogError,
                                      Record, TuningLog, TuningLogWarning, check_log, distill,
                                      read_records)

TARGET = {"target": "llvm -mcpu=znver4", "triple": "x86_64", "cpu": "znver4",
          "features": ["+avx2", "+fma"]}


def _rec(key="conv(a)", cost=1.0, error=None, **config):
    return Record(key, TARGET, config or {"ow_tile": 14}, [] if error else [cost], error)


def test_records_round_trip_through_one_json_line_each(tmp_path):
    log = TuningLog(tmp_path / "sub" / "t.jsonl")          # parent folders are created
    log.append(_rec(cost=2.0, ow_tile=7))
    log.append(_rec(error="timed out after 1 s"))
    lines = (tmp_path / "sub" / "t.jsonl").read_text().splitlines()
    assert len(lines) == 2
    first = json.loads(lines[0])
    assert first["version"] == FORMAT_VERSION and first["config"] == {"ow_tile": 7}
    assert set(first) == {"version", "key", "target", "config", "costs", "error", "timestamp"}
    got = log.records()
    assert [r.cost for r in got] == [2.0, math.inf]
    assert got[1].error == "timed out after 1 s"


def test_tiling_tuples_come_back_as_tuples(tmp_path):
    log = TuningLog(tmp_path / "t.jsonl")
    log.append(Record("vta_conv2d(x)", {"target": "vta"}, {"tiling": (2, 8, 1, 1, 3, 2, True)},
                      [5000.0]))
    assert log.records()[0].config_values() == {"tiling": (2, 8, 1, 1, 3, 2, True)}


def test_damaged_and_foreign_lines_are_skipped_with_file_and_line(tmp_path):
    path = tmp_path / "t.jsonl"
    TuningLog(path).append(_rec())
    with open(path, "a") as f:
        f.write('{"version": 1, "key": "conv(a)", "targ\n')          # cut off by a crash
        f.write(json.dumps({"version": 99, "key": "k", "target": {}, "config": {},
                            "costs": []}) + "\n")                     # another format
        f.write('["not", "a", "record"]\n')
    TuningLog(path).append(_rec(cost=0.5))
    with pytest.warns(TuningLogWarning) as caught:
        recs = read_records(path)
    assert [r.cost for r in recs] == [1.0, 0.5]
    messages = [str(w.message) for w in caught]
    assert [m.split(": ")[0] for m in messages] == [f"{path} line {n}" for n in (2, 3, 4)]
    assert "format version 99" in messages[1]


def test_a_missing_log_has_no_records(tmp_path):
    assert TuningLog(tmp_path / "none.jsonl").records() == []


def test_distill_keeps_the_best_record_per_workload_and_never_an_error(tmp_path):
    src, dst = tmp_path / "all.jsonl", tmp_path / "best.jsonl"
    log = TuningLog(src)
    for rec in (_rec("a", 3.0, ow_tile=4), _rec("a", 1.0, ow_tile=8), _rec("a", error="crash"),
                _rec("b", error="crash"), _rec("b", 2.0, ow_tile=16)):
        log.append(rec)
    assert distill(src, dst) == 2
    best = {r.key: r for r in read_records(dst)}
    assert best["a"].config == {"ow_tile": 8} and best["b"].cost == 2.0


def test_a_file_of_which_no_line_is_a_record_is_not_a_tuning_log(tmp_path):
    npz = tmp_path / "data.npz"
    np.savez(npz, images=np.zeros((70, 64), np.float32))   # binary, many "lines"
    text = tmp_path / "notes.jsonl"
    text.write_text("hello\n[1, 2]\n")
    for path in (npz, text):
        with warnings.catch_warnings():
            warnings.simplefilter("error")           # raised at once: no per-line warnings
            with pytest.raises(NotATuningLogError, match=f"^{path}: not a tuning log \\(no line "
                               "is a tuning record; line 1: "):
                read_records(path)
            with pytest.raises(NotATuningLogError, match="no line is a tuning record"):
                check_log(path)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    check_log(empty)
    assert read_records(empty) == [] and read_records(tmp_path / "none.jsonl") == []


def test_a_damaged_log_warns_for_the_first_lines_then_counts_the_rest(tmp_path):
    path = tmp_path / "t.jsonl"
    TuningLog(path).append(_rec())
    with open(path, "a") as f:
        f.write("garbage\n" * (MAX_LINE_WARNINGS + 7))
    with pytest.warns(TuningLogWarning) as caught:
        assert len(read_records(path)) == 1
    msgs = [str(w.message) for w in caught]
    assert len(msgs) == MAX_LINE_WARNINGS + 1
    assert msgs[0].startswith(f"{path} line 2: skipped a line")
    assert msgs[-1] == f"{path}: skipped 7 more lines that are not tuning records"


def test_check_log_before_appending_wants_a_record_on_the_first_line(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text("garbage\n")
    TuningLog(path).append(_rec())
    check_log(path)                                   # some line is a record: readable
    with pytest.raises(NotATuningLogError, match="its first line is not a tuning record; "
                                                 "line 1: "):
        check_log(path, first_line=True)
    check_log(tmp_path / "new.jsonl", first_line=True)   # a new log is fine


def test_distill_never_replaces_a_file_that_is_not_a_tuning_log(tmp_path):
    src, model = tmp_path / "all.jsonl", tmp_path / "model.onnx"
    TuningLog(src).append(_rec())
    model.write_bytes(b"\x08\x07\x12\x04onnx")
    with pytest.raises(NotATuningLogError, match="model.onnx: not a tuning log"):
        distill(src, model)
    assert model.read_bytes() == b"\x08\x07\x12\x04onnx"
