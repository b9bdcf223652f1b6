"""Timelines of the cycle model: Chrome trace events, utilization timeline, plot."""
from __future__ import annotations

import json

import numpy as np
import pytest

from sim import cycle
from sim.random_program import random_program
from sim.trace import TRACKS
from vta_hw.config import load_config


@pytest.fixture(scope="module")
def run():
    prog, _ = random_program(load_config("1x8_i8w8a32_11_12_13_14"), 3)
    return prog, cycle.run(prog, trace=True)


def test_one_span_per_instruction(run):
    prog, r = run
    ev = r.trace.chrome_events()
    names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names == set(TRACKS)
    spans = [e for e in ev if e["ph"] == "X" and e["cat"] not in ("stall", "fetch", "dram")]
    assert sorted(e["args"]["insn"] for e in spans) == list(range(len(prog.insns)))
    dispatch = [e for e in ev if e["ph"] == "X" and e["cat"] == "fetch"]
    assert len(dispatch) == len(prog.insns)
    for e in ev:
        if e["ph"] == "X":
            assert e["dur"] >= 1 and 0 <= e["ts"] and e["ts"] + e["dur"] <= r.cycles + 1
    # instructions of one module do not overlap
    for tid in range(1, 4):
        iv = sorted((e["ts"], e["ts"] + e["dur"]) for e in spans if e["tid"] == tid)
        assert all(a[1] <= b[0] for a, b in zip(iv, iv[1:]))


def test_tokens_are_flows_from_push_to_pop(run):
    _, r = run
    ev = r.trace.chrome_events()
    starts = {e["id"]: e for e in ev if e["ph"] == "s"}
    ends = {e["id"]: e for e in ev if e["ph"] == "f"}
    assert starts and set(ends) <= set(starts)
    assert len(starts) - len(ends) == sum(r.leftover_tokens.values())
    for k, f in ends.items():
        assert f["ts"] >= starts[k]["ts"] + 1  # TOKEN_LATENCY
        assert f["tid"] != starts[k]["tid"]


def test_memory_track_holds_every_byte(run):
    _, r = run
    ev = [e for e in r.trace.chrome_events() if e["ph"] == "X" and e["cat"] == "dram"]
    assert sum(e["args"]["bytes"] for e in ev) == r.dram_bytes
    iv = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev)
    assert all(a[1] <= b[0] for a, b in zip(iv, iv[1:]))  # one burst at a time


def test_timeline_integrates_to_the_totals(run):
    _, r = run
    tl = r.trace.timeline(bins=37)
    width = np.diff(tl["edges"])
    busy = sum(e - s for _, _, s, e in r.trace.spans["compute"])
    assert np.isclose(np.sum(tl["compute"] * width), busy)
    assert np.isclose(np.sum(tl["gemm"] * width), r.gemm_utilization * r.cycles)
    for k, v in tl.items():
        if k != "edges":
            assert v.min() >= 0 and v.max() <= 1 + 1e-9, k


def test_files(run, tmp_path):
    _, r = run
    r.trace.write_chrome(tmp_path / "t.json")
    data = json.loads((tmp_path / "t.json").read_text())
    assert data["otherData"]["cycles"] == r.cycles and data["traceEvents"]
    r.trace.plot(tmp_path / "t.png")
    assert (tmp_path / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
