"""The tuning log: JSON lines, appended per trial, damaged or foreign lines skipped with a
warning naming the file and line, distilled to the best record per workload."""
from __future__ import annotations

import json
import math

import pytest

from compiler.autotune.record import (FORMAT_VERSION, Record, TuningLog, TuningLogWarning,
                                      distill, read_records)

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
