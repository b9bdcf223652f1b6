"""The runners in a tiny tuning session each: a small conv on this CPU in a worker process,
an accelerator conv on the cycle model (bit-exact check of the chosen tiling), the same
through a local Dask cluster; hangs, crashes and failed builds become trial errors."""
from __future__ import annotations

import math
import os
import signal
import threading

import numpy as np
import pytest

from compiler.autotune import TuningLog, tune
from compiler.autotune.search import random_points
from compiler.autotune.task import llvm_tasks, vta_conv2d_task
from compiler.graph import Graph, Op, input_node, make, optimize, param_node
from compiler.graph_lower.space import Config
from driver.tune import CycleRunner, DaskRunner, LocalRunner
from vta_hw.config import load_config


@pytest.fixture(scope="module")
def conv_task():
    w = np.random.default_rng(0).standard_normal((16, 8, 3, 3)).astype(np.float32)
    x = input_node("x", (1, 8, 8, 8))
    y = make(Op.RELU, make(Op.CONV2D, x, param_node("w", w), pads=(1, 1, 1, 1)))
    (t,) = llvm_tasks(optimize(Graph((x,), (y,), ("y",)), {"w": w}).graph)
    return t


@pytest.fixture(scope="module")
def runner():
    with LocalRunner(timeout=60, threads=1, build_jobs=2, repeats=2, min_repeat_ms=1) as r:
        yield r


@pytest.fixture(scope="module")
def vta_task():
    return vta_conv2d_task(load_config(), (1, 16, 4, 4), (16, 16, 3, 3), (1, 1), (1, 1),
                           shift=5, relu=True)


def test_a_tiny_cpu_session_measures_in_a_worker_process(conv_task, runner, tmp_path):
    log = TuningLog(tmp_path / "t.jsonl")
    (res,) = tune([conv_task], runner, trials=3, log=log, strategy="xgb", batch=3)
    recs = log.records()
    assert len(recs) == 3 and not [r.error for r in recs if r.error]
    assert all(len(r.costs) == 2 and 0 < r.cost < 1 for r in recs)   # seconds per run
    assert res.best_cost == min(r.cost for r in recs) <= res.default_cost
    assert runner.worker.proc.pid != os.getpid()


def test_a_batch_builds_in_parallel_worker_processes_then_runs_one_at_a_time(conv_task, runner):
    cfgs = [conv_task.space.default] + [c for c in random_points(
        conv_task.space, 40, {conv_task.space.default}, np.random.default_rng(0))
        if c["algorithm"] == "direct"][:3]
    res = runner.measure(conv_task, cfgs)
    assert [r.error for r in res] == [None] * 4 and all(0 < r.cost < 1 for r in res)
    pids = {w.proc.pid for w in runner._all_builders}
    assert runner.build_jobs == 2 and len(pids) == 2 and runner.worker.proc.pid not in pids
    assert os.listdir(runner._dir) == []                      # each module file run, then deleted


def test_a_build_past_the_timeout_is_an_error(conv_task):
    with LocalRunner(timeout=0.05, threads=1, build_jobs=1) as r:
        r._all_builders[0].start()                            # start-up is not the build's time
        (res,) = r.measure(conv_task, [conv_task.space.default])
    assert res.error == "timed out after 0.05 s (build)" and res.costs == []


def test_build_jobs_below_zero_are_refused():
    with pytest.raises(ValueError, match=r"build_jobs must be >= 0, not -1"):
        LocalRunner(build_jobs=-1)


def test_a_failed_build_is_an_error_and_the_next_candidate_runs(conv_task, runner):
    bad = Config((("conv_out_block", 5), ("ow_tile", 14)))       # not a divisor of 16
    r1, r2 = runner.measure(conv_task, [bad, conv_task.space.default])
    assert r1.error.startswith("ValueError: knob 'conv_out_block' must be one of")
    assert r2.error is None and math.isfinite(r2.cost)


def test_a_hang_is_killed_at_the_timeout(conv_task):
    with LocalRunner(timeout=2, threads=1, build_jobs=0, number=10**9, check=False) as r:
        (res,) = r.measure(conv_task, [conv_task.space.default])
        assert res.error == "timed out after 2 s (build and run)" and res.costs == []
        assert r.worker.proc is None                              # killed; restarted on demand


def test_a_crash_is_an_error_and_a_fresh_worker_takes_the_next_candidate(conv_task):
    with LocalRunner(timeout=60, threads=1, build_jobs=0, number=10**9, check=False) as r:
        r.worker.start()
        killer = threading.Timer(2.0, os.kill, (r.worker.proc.pid, signal.SIGKILL))
        killer.start()
        (res,) = r.measure(conv_task, [conv_task.space.default])
        killer.join()
        assert res.error == (f"worker process crashed (exit code {-signal.SIGKILL}; "
                             "build and run)")
        r.options["number"] = 1
        (ok,) = r.measure(conv_task, [conv_task.space.default])
        assert ok.error is None


def test_a_tiny_accelerator_session_on_the_cycle_model_checks_the_choice(vta_task):
    (res,) = tune([vta_task], CycleRunner(), trials=3, strategy="random", batch=3)
    assert res.trials == 3 and res.default_cost > 0
    assert res.best_cost == min(res.curve) and res.best_cost == int(res.best_cost)   # cycles
    assert res.check is None                                      # bit-exact on fsim


def test_measurements_through_a_local_dask_cluster(vta_task):
    from distributed import LocalCluster
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp",
                      host="127.0.0.1", dashboard_address=None) as cluster:
        runner = DaskRunner(cluster.scheduler_address, timeout=60)
        try:
            (res,) = tune([vta_task], runner, trials=2, strategy="random", batch=2)
            direct = CycleRunner().measure(vta_task, [vta_task.space.default])[0].cost
        finally:
            runner.close()
    assert res.trials == 2 and res.default_cost == direct and res.check is None


def test_an_unreachable_scheduler_is_named():
    with pytest.raises(OSError, match=r"cannot reach the Dask scheduler at 'tcp://127.0.0.1:1'"):
        DaskRunner("tcp://127.0.0.1:1", timeout=1)
