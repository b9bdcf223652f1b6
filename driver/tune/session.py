"""``vta tune`` as a library call: a model's tasks, a runner, the tuner, the summary.

:func:`tune_model` extracts the tasks of a model for ``"llvm"`` or ``"vta"``,
picks the runner (the local worker process or the cycle model; a Dask cluster
when ``scheduler`` names one), tunes into the JSON-lines log and, for the CPU,
runs the layout stage (every conv in each candidate layout, the layout transforms,
then the graph tuner's choice: ``compiler.autotune.layout_stage``), then
builds the model with the log and measures its end-to-end latency, so the sum
of the tuned per-task times can be printed beside it (they disagree where
layout transforms, copies and the runtime's own work are not in any task:
tvm#5610, tvm#9269).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from compiler.autotune import TuningLog, extract_tasks, tune
from compiler.autotune.layout_stage import tune_layouts
from vta_hw.errors import ArgumentError


@dataclass
class Summary:
    """What a tuning session found.

    Attributes:
        results: ``compiler.autotune.tuner.TaskResult`` per task.
        unit: ``"s"`` (CPU seconds) or ``"cycles"`` (the cycle model).
        tasks_default / tasks_tuned: sum over tasks of weight x cost at the default
            point and at the best point.
        end_to_end_s: the built model's measured latency with the log (CPU; else None).
        layout: the graph tuner's decision (``record.LayoutRecord``; CPU with graph
            tuning, else None); its ``estimate`` holds the estimated totals in seconds.
    """

    results: list
    unit: str
    tasks_default: float = 0.0
    tasks_tuned: float = 0.0
    end_to_end_s: "float | None" = None
    checks: list = field(default_factory=list)
    layout: object = None


def make_runner(target: str, scheduler: "str | None" = None, timeout: float = 60.0,
                threads: "int | None" = None):
    """The runner for ``target`` (``"llvm..."`` or ``"vta"``); on ``scheduler`` (a Dask
    address) a :class:`~driver.tune.DaskRunner`."""
    if scheduler:
        from .cluster import DaskRunner
        return DaskRunner(scheduler, timeout=timeout)
    if target.split()[0] == "vta":
        from .cycle import CycleRunner
        return CycleRunner()
    from compiler.codegen.llvm.target import parse_target
    if not parse_target(target).is_host:
        raise ArgumentError(f"target {target!r} is not this machine: `vta tune` measures CPU "
                         "candidates here (or on --scheduler's workers, which must be that "
                         "machine); use --target llvm")
    from .local import LocalRunner
    return LocalRunner(timeout=timeout, threads=threads)


def tune_model(model, output, *, target: str = "llvm", trials: int = 16,
               time_budget_s: "float | None" = None, strategy: str = "xgb",
               scheduler: "str | None" = None, input_shapes=None, vta_config=None,
               timeout: float = 60.0, threads: "int | None" = None, on_tasks=None,
               on_trial=None, measure_model: bool = True, graph_tuning: bool = True) -> Summary:
    """Tune ``model`` for ``target`` into the log ``output`` (appended to; a rerun
    continues from it).

    Args:
        model: what ``build_model`` takes (an ONNX path...).
        output: the tuning log's path.
        target: ``"llvm"`` (or an LLVM target string) or ``"vta"``.
        trials: per-task trial cap; time_budget_s: stop after that many seconds.
        strategy: ``"xgb"`` (cost model) or ``"random"``.
        scheduler: a Dask scheduler address (``tcp://HOST:8786``) to measure on.
        vta_config: accelerator preset (``target="vta"``).
        timeout, threads: the local runner's per-candidate limit and ``OMP_NUM_THREADS``.
        on_tasks: called with the task list before tuning (progress bars).
        on_trial: ``on_trial(task_index, record, best_cost)`` after each trial.
        measure_model: CPU: build with the log and measure the end-to-end latency.
        graph_tuning: CPU: after the per-task stage, run the layout stage and append the
            graph tuner's decision to the log (the build applies it).

    Raises:
        ValueError: an unknown strategy or target; compiler.frontend.FrontendError: the
            model does not import; OSError: the Dask scheduler cannot be reached.
    """
    runner = make_runner(target, scheduler, timeout, threads)
    vta = target.split()[0] == "vta"
    layout = None
    try:
        tasks = extract_tasks(model, target, input_shapes=input_shapes, vta_config=vta_config)
        if on_tasks is not None:
            on_tasks(tasks)
        start = time.monotonic()
        results = tune(tasks, runner, trials=trials, log=TuningLog(output), strategy=strategy,
                       time_budget_s=time_budget_s, on_trial=on_trial)
        if graph_tuning and not vta:
            left = None if time_budget_s is None else \
                max(time_budget_s - (time.monotonic() - start), 0.0)
            _, layout = tune_layouts(model, runner, TuningLog(output), target=target,
                                     trials=trials, input_shapes=input_shapes,
                                     strategy=strategy, time_budget_s=left)
    finally:
        if hasattr(runner, "close"):
            runner.close()
    fin = [r for r in results if math.isfinite(r.best_cost)]
    s = Summary(results, "cycles" if vta else "s",
                sum(r.task.weight * r.default_cost for r in fin if math.isfinite(r.default_cost)),
                sum(r.task.weight * r.best_cost for r in fin))
    s.checks = [(r.task.name, r.check) for r in results if r.check]
    s.layout = layout
    if measure_model and not vta and tasks:
        s.end_to_end_s = model_latency(model, target, output, input_shapes, threads)
    return s


def model_latency(model, target, log, input_shapes=None, threads=None, repeat: int = 20) -> float:
    """Median seconds per run of ``model`` built with the tuning ``log``."""
    import os

    import numpy as np

    from compiler import build_model
    from driver.runtime import load_module
    if threads is not None:
        os.environ["OMP_NUM_THREADS"] = str(threads)   # read when libgomp starts its pool
    cm = build_model(model, target=target, input_shapes=input_shapes, tuning_log=log)
    m = load_module(cm)
    rng = np.random.default_rng(0)
    for i in cm.graph_json["inputs"]:
        m.set_input(i["name"], rng.standard_normal(i["shape"]).astype(i["dtype"]))
    return float(m.benchmark(repeat=repeat)["median_s"])
