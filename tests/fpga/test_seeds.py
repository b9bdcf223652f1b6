"""Seed sweeps (``fpga.seeds``): the best Fmax is kept, a failed seed is reported, not fatal."""
from __future__ import annotations

import threading

import pytest

from fpga import seeds as S
from vta_hw.tool import ToolError, ToolTimeout


def _runner(outcomes: dict):
    """A place-and-route stand-in: seed -> Fmax (MHz), None, or an exception to raise."""
    seen = []
    lock = threading.Lock()

    def run_one(seed):
        with lock:
            seen.append(seed)
        out = outcomes[seed]
        if isinstance(out, Exception):
            raise out
        return out
    run_one.seen = seen
    return run_one


def test_the_highest_fmax_is_kept_and_every_seed_reported():
    run = _runner({1: 48.9, 2: 53.6, 3: 51.0, 4: 53.1})
    res = S.sweep([1, 2, 3, 4], run, workers=2, log=lambda s: None)
    assert sorted(run.seen) == [1, 2, 3, 4]
    assert [r.seed for r in res] == [1, 2, 3, 4]          # in seed order, whatever finished first
    assert [r.fmax_mhz for r in res] == [48.9, 53.6, 51.0, 53.1]
    assert S.best(res).seed == 2


def test_a_timed_out_or_failed_seed_is_reported_and_the_rest_still_count():
    run = _runner({1: ToolTimeout("place and route (nextpnr-ecp5)", 60.0), 2: 50.5,
                   3: ToolError("could not start nextpnr"), 4: None})
    lines = []
    res = S.sweep([1, 2, 3, 4], run, workers=4, log=lines.append)
    assert [r.ok for r in res] == [False, True, False, False]
    assert "did not finish within its limit of 60 s" in res[0].error
    assert res[2].error == "could not start nextpnr"
    assert res[3].error == "nextpnr reported no Fmax"
    assert S.best(res) == S.SeedResult(2, 50.5)
    assert sorted(lines) == sorted([
        "  seed 1: FAILED: " + res[0].error, "  seed 2: Fmax 50.50 MHz",
        "  seed 3: FAILED: could not start nextpnr", "  seed 4: FAILED: nextpnr reported no Fmax"])
    assert S.as_table(res)[1] == {"seed": 2, "fmax_mhz": 50.5, "error": None}
    assert S.as_table([S.SeedResult(7, 20.38652992)]) == [{"seed": 7, "fmax_mhz": 20.39,
                                                           "error": None}]


def test_equal_fmax_keeps_the_lower_seed():
    res = S.sweep([3, 1, 2], _runner({1: 50.0, 2: 50.0, 3: 49.0}), workers=1, log=lambda s: None)
    assert S.best(res).seed == 1


def test_when_every_seed_fails_the_error_names_each():
    res = S.sweep([1, 2], _runner({1: ToolError("boom"), 2: ToolError("bang")}), workers=2,
                  log=lambda s: None)
    with pytest.raises(S.SeedSweepError, match=r"no seed placed and routed \(seed 1: boom; "
                                               r"seed 2: bang\)"):
        S.best(res)


def test_a_bug_in_the_runner_is_not_swallowed():
    with pytest.raises(KeyError):
        S.sweep([1, 2], _runner({1: 50.0}), workers=1, log=lambda s: None)


def test_workers_are_bounded_by_the_cores(monkeypatch):
    monkeypatch.setattr(S.os, "cpu_count", lambda: 2)
    assert [S.default_workers(n) for n in (1, 2, 8)] == [1, 2, 2]
