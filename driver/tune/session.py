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

import errno
import math
import os
import time
from dataclasses import dataclass, field

from compiler.autotune import TuningLog, extract_tasks, tune
from compiler.autotune.layout_stage import tune_layouts
from compiler.autotune.record import check_log
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
        seconds: wall seconds per phase: ``extract`` (import the model, find its tasks),
            ``search`` (the per-task search, within ``time_budget_s``, then the check of
            each task's best point), ``layout`` (the layout stage, within what is left of
            the budget), ``latency`` (build the model with the log and time it).
    """

    results: list
    unit: str
    tasks_default: float = 0.0
    tasks_tuned: float = 0.0
    end_to_end_s: "float | None" = None
    checks: list = field(default_factory=list)
    layout: object = None
    seconds: dict = field(default_factory=dict)


def make_runner(target: str, scheduler: "str | None" = None, timeout: float = 60.0,
                threads: "int | None" = None, build_jobs: "int | None" = None):
    """The runner for ``target`` (``"llvm..."``, ``"vta"``, ``"opencl"`` or ``"cuda..."``); on
    ``scheduler`` (a Dask address) a :class:`~driver.tune.DaskRunner`. ``build_jobs``: the
    local runner's parallel builds (None: ``local.default_build_jobs()``).

    Raises:
        compiler.autotune.gpu_task.GpuDeviceError: a GPU target whose device this machine
            lacks (``vta tune --target cuda`` without a GPU: names the fix).
    """
    if scheduler:
        from .cluster import DaskRunner
        return DaskRunner(scheduler, timeout=timeout)
    kind = target.split()[0]
    if kind == "vta":
        from .cycle import CycleRunner
        return CycleRunner()
    if kind in ("cuda", "opencl"):
        from compiler.autotune.gpu_task import require_device
        from compiler.graph_lower.gpu import parse_gpu_target
        parse_gpu_target(target)
        require_device(target)
        from .local import LocalRunner
        return LocalRunner(timeout=timeout, threads=threads)
    from compiler.codegen.llvm.target import parse_target
    if not parse_target(target).is_host:
        raise ArgumentError(f"target {target!r} is not this machine: `vta tune` measures CPU "
                         "candidates here (or on --scheduler's workers, which must be that "
                         "machine); use --target llvm")
    from .local import LocalRunner
    return LocalRunner(timeout=timeout, threads=threads, build_jobs=build_jobs)


def tune_model(model, output, *, target: str = "llvm", trials: int = 16,
               time_budget_s: "float | None" = None, strategy: str = "xgb",
               scheduler: "str | None" = None, input_shapes=None, vta_config=None,
               timeout: float = 60.0, threads: "int | None" = None, on_tasks=None,
               on_trial=None, measure_model: bool = True, build_jobs: "int | None" = None,
               transfer_logs=(), graph_tuning: bool = True) -> Summary:
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
        build_jobs: candidates built at once before they are measured one at a time
            (None: ``min(cores, 4)``; 0: each built in the measuring worker).
        transfer_logs: earlier tuning logs (any models, any targets) whose records
            pre-train the cost model and, for a task's workload on another target, are
            measured early as warm starts (``compiler.autotune.transfer``); ``output`` 's
            own records always do.
        graph_tuning: CPU: after the per-task stage, run the layout stage and append the
            graph tuner's decision to the log (the build applies it).

    Raises:
        ValueError: an unknown strategy or target; compiler.frontend.FrontendError: the
            model does not import; OSError: the Dask scheduler cannot be reached;
            FileNotFoundError: a transfer log that does not exist (its ``filename``);
            compiler.autotune.record.NotATuningLogError: ``output`` exists and its first line
            is not a tuning record (nothing is appended to it).
    """
    check_log(output, first_line=True)    # never append to a model or other non-log file
    transfer = transfer_records(transfer_logs)
    runner = make_runner(target, scheduler, timeout, threads, build_jobs)
    vta = target.split()[0] == "vta"
    layout = None
    seconds = {}
    t0 = time.monotonic()
    try:
        tasks = extract_tasks(model, target, input_shapes=input_shapes, vta_config=vta_config)
        if on_tasks is not None:
            on_tasks(tasks)
        start = time.monotonic()
        seconds["extract"] = start - t0
        results = tune(tasks, runner, trials=trials, log=TuningLog(output), strategy=strategy,
                       time_budget_s=time_budget_s, on_trial=on_trial, transfer=transfer)
        seconds["search"] = time.monotonic() - start
        if graph_tuning and target.split()[0] not in ("vta", "cuda", "opencl"):
            left = None if time_budget_s is None else \
                max(time_budget_s - (time.monotonic() - start), 0.0)
            _, layout = tune_layouts(model, runner, TuningLog(output), target=target,
                                     trials=trials, input_shapes=input_shapes,
                                     strategy=strategy, time_budget_s=left, transfer=transfer)
            seconds["layout"] = time.monotonic() - start - seconds["search"]
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
        t1 = time.monotonic()
        s.end_to_end_s = model_latency(model, target, output, input_shapes, threads)
        seconds["latency"] = time.monotonic() - t1
    s.seconds = seconds
    return s


def transfer_records(paths) -> list:
    """The records of the tuning logs ``paths`` (``--transfer-log``).

    Raises:
        FileNotFoundError: a path that is not a file (its ``filename``).
    """
    from compiler.autotune.record import read_records
    out = []
    for p in paths:
        if not os.path.isfile(p):
            raise FileNotFoundError(errno.ENOENT, "no such tuning log to transfer from (give "
                                    "a log that `vta tune MODEL -o LOG` wrote)", os.fspath(p))
        out += read_records(p)
    return out


def model_latency(model, target, log, input_shapes=None, threads=None, repeat: int = 20) -> float:
    """Median seconds per run of ``model`` built with the tuning ``log``."""
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
