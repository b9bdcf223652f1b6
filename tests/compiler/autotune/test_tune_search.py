"""The tuning loop on a toy task kind: the default point first, errors recorded without
stopping, resumable from the log, the cost model beating random search, the scheduler
spending trials where the gain is largest."""
from __future__ import annotations

import time

import numpy as np
import pytest

from compiler.autotune import features, tune
from compiler.autotune.record import TuningLog
from compiler.autotune.scheduler import TaskScheduler
from compiler.autotune.search import make_strategy, random_points
from compiler.autotune.task import Task
from compiler.autotune.tuner import MeasureResult
from compiler.graph_lower.space import ConfigSpace, Knob

SPACE = ConfigSpace((Knob("a", tuple(range(16)), 0), Knob("b", tuple(range(16)), 0)))


def _cost(cfg) -> float:
    # a smooth bowl with its minimum 1.0 at a=11, b=5; a=3 fails to build
    return 1.0 + 0.1 * (cfg["a"] - 11) ** 2 + 0.05 * (cfg["b"] - 5) ** 2


class ToyRunner:
    def __init__(self):
        self.measured = []

    def measure(self, task, configs):
        self.measured += configs
        return [MeasureResult(error="build failed: a=3") if c["a"] == 3 else
                MeasureResult(costs=[_cost(c) * task.payload["scale"]]) for c in configs]

    def check(self, task, config):
        return None if config["a"] != 3 else "wrong"


@pytest.fixture(autouse=True)
def toy_kind(monkeypatch):
    monkeypatch.setitem(features.FEATURIZERS, "toy", lambda t, c: [float(c["a"]), float(c["b"])])


def _task(key="toy", scale=1.0, weight=1):
    return Task(key, "toy", SPACE, {"scale": scale}, {"target": "toy"}, weight, key)


def test_the_default_point_is_measured_first_and_errors_do_not_stop_the_tuner(tmp_path):
    runner = ToyRunner()
    log = TuningLog(tmp_path / "t.jsonl")
    (res,) = tune([_task()], runner, trials=40, log=log, strategy="random", batch=8)
    assert runner.measured[0] == SPACE.default
    assert res.default_cost == _cost(SPACE.default)
    assert res.trials == 40 and len(log.records()) == 40
    assert len(set(runner.measured)) == 40                    # no point measured twice
    errors = [r for r in log.records() if r.error]
    assert all(r.config["a"] == 3 for r in errors)
    assert res.best_cost <= res.default_cost and res.best_cost == min(res.curve)
    assert res.check is None


def test_a_rerun_continues_from_the_log(tmp_path):
    log = TuningLog(tmp_path / "t.jsonl")
    tune([_task()], ToyRunner(), trials=12, log=log, strategy="random", batch=4)
    again = ToyRunner()
    (res,) = tune([_task()], again, trials=20, log=log, strategy="random", batch=4)
    assert len(again.measured) == 8                           # only the missing trials
    assert not set(again.measured) & {SPACE.point(**r.config_values()) for r in log.records()[:12]}
    assert res.trials == 20


def test_the_cost_model_finds_the_optimum_sooner_than_random_search():
    # the same budget, averaged over seeds: xgb ends closer to the optimum 1.0
    def final(strategy, seed):
        (res,) = tune([_task()], ToyRunner(), trials=40, strategy=strategy, batch=8, seed=seed)
        return res.best_cost
    xgb = np.mean([final("xgb", s) for s in range(3)])
    rnd = np.mean([final("random", s) for s in range(3)])
    assert xgb < rnd and xgb < 1.2


def test_the_scheduler_spends_the_budget_where_the_weighted_cost_is_largest():
    big, small = _task("big", scale=10.0, weight=4), _task("small", scale=1.0)
    sched = TaskScheduler([small, big], 64)
    sched.record_round(0, 4, 2.0)
    sched.record_round(1, 4, 20.0)
    assert sched.next_task() == 1
    sched.states[1].trials = 64
    assert sched.next_task() == 0
    sched.states[0].trials = 64
    assert sched.next_task() is None


def test_random_points_are_distinct_and_untried():
    rng = np.random.default_rng(0)
    tried = {SPACE.point(a=1, b=1)}
    pts = random_points(SPACE, 50, tried, rng)
    assert len(set(pts)) == 50 and not set(pts) & tried


def test_an_unknown_strategy_names_the_strategies():
    with pytest.raises(ValueError, match=r"search strategy must be one of \['random', 'xgb'\], "
                                         r"not 'grid'"):
        make_strategy("grid")


class SlowRunner(ToyRunner):
    """Each candidate takes ``seconds`` of wall time."""

    def __init__(self, seconds):
        super().__init__()
        self.seconds, self.rounds = seconds, []

    def measure(self, task, configs):
        self.rounds.append(len(configs))
        time.sleep(self.seconds * len(configs))
        return super().measure(task, configs)


def test_a_time_budget_is_strict_and_first_rounds_are_the_default_point_alone():
    runner = SlowRunner(0.05)
    start = time.monotonic()
    results = tune([_task("a"), _task("b")], runner, trials=200, strategy="random", batch=8,
                   time_budget_s=1.0)
    took = time.monotonic() - start
    # ends within one candidate (0.05 s) of the budget, plus slack for a loaded machine; the
    # budget leaves a full round of 8 (0.4 s) after the two single-candidate rounds even when
    # a loaded machine doubles the tuner's own overhead
    assert 1.0 <= took < 1.0 + 0.05 + 0.25, took
    assert runner.rounds[:2] == [1, 1] and runner.measured[:2] == [SPACE.default] * 2
    assert max(runner.rounds) == 8                        # full rounds while time allows
    assert sum(r.trials for r in results) == len(runner.measured) >= 6


def test_no_round_starts_once_the_budget_is_spent():
    # the first candidate alone outlasts the budget: the second task is never started
    results = tune([_task("a"), _task("b")], SlowRunner(0.3), trials=200, strategy="random",
                   batch=8, time_budget_s=0.1)
    assert [r.trials for r in results] == [1, 0]
    assert results[1].best_config is None


def test_choosing_stops_featurizing_at_its_time_limit(monkeypatch):
    calls = []

    def slow(task, cfg):           # a featurizer that takes 20 ms, as lowering does
        calls.append(cfg)
        time.sleep(0.02)
        return [float(cfg["a"]), float(cfg["b"])]
    monkeypatch.setitem(features.FEATURIZERS, "toy", slow)
    search, task = make_strategy("xgb"), _task()
    pts = random_points(SPACE, 10, (), np.random.default_rng(1))
    search.observe(task, [(c, _cost(c)) for c in pts])       # trained on 10 points
    calls.clear()
    start = time.monotonic()
    got = search.propose(task, 4, set(pts), np.random.default_rng(0), time_s=0.1)
    assert len(got) == 4 and not set(got) & set(pts)
    assert len(calls) <= 6 and time.monotonic() - start < 0.1 + 0.02 + 0.25


def _cpu(cpu, *features):
    return {"target": f"llvm -mcpu={cpu}", "triple": "x86_64-unknown-linux-gnu", "cpu": cpu,
            "features": sorted(features)}


def test_records_of_other_cpus_are_warm_starts_measured_here_not_results():
    from compiler.autotune.record import Record
    znver2 = _cpu("znver2", "+avx", "+avx2", "+fma")
    task = Task("toy", "toy", SPACE, {"scale": 1.0}, znver2, 1, "toy")
    transfer = [  # the same workload tuned elsewhere: the costs there mean nothing here
        Record("toy", _cpu("skylake-avx512", "+avx", "+avx2", "+avx512f"), {"a": 10, "b": 5},
               [0.1]),
        Record("toy", _cpu("znver1", "+avx", "+avx2", "+fma"), {"a": 11, "b": 5}, [0.5]),
        Record("toy", _cpu("znver1", "+avx", "+avx2", "+fma"), {"a": 1, "b": 1}, [0.9]),
        Record("other", znver2, {"a": 2, "b": 2}, [0.1]),                 # another workload
    ]
    runner = ToyRunner()
    (res,) = tune([task], runner, trials=3, strategy="random", batch=4, transfer=transfer)
    # the default point alone, then each other target's best, the same ISA class first
    assert [dict(c.values) for c in runner.measured] == [
        {"a": 0, "b": 0}, {"a": 11, "b": 5}, {"a": 10, "b": 5}]
    assert res.best_cost == _cost(SPACE.point(a=11, b=5)) == 1.0     # measured here
