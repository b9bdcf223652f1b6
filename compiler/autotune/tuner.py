"""The tuning loop: propose candidates, measure them through a runner, log, learn.

A runner is any object with ``measure(task, configs) -> [MeasureResult]`` (one
result per config, in order; a candidate that fails to build, crashes, hangs or
computes a wrong result comes back with ``error`` set and never raises) and,
optionally, ``check(task, config) -> str | None`` (a final correctness check of
the chosen point: None if it passes, else why not). Runners live in
``driver/tune/`` and are handed in; this module never imports the driver.

Each task's first round is its default point alone, so the result is never
worse than the untuned build and a short budget still reaches every task.
Records already in the log for a task's key and target count as done trials (a
rerun continues where an interrupted one stopped); the log's other records and
``transfer`` records pre-train the search's cost model (``transfer.py``), and the best
points of the task's own workload on other targets among them (``transfer.warm_starts``)
are measured next, ahead of the strategy's proposals.

A time budget is strict: no round starts after it, and a round is cut to the
candidates that fit in the time left at the task's measured seconds per trial
(its last round's, else the slowest task's), at least one. So the session ends
within about one candidate's time of the budget, and never later than one
runner timeout past it when a candidate runs longer than the ones before it.
Choosing a round's candidates may take ``CHOOSE_SHARE`` of the time measuring the
task's last round took (else the slowest task's; at least ``MIN_CHOOSE_S``: the
strategy's ``time_s``): a cost model that featurizes slowly costs at most about a
tenth of the trial rate (measuring, not proposing, sets the pace).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from compiler.graph_lower.space import Config
from vta_hw.errors import ArgumentError

from .record import Record, TuningLog
from .scheduler import TaskScheduler
from .search import make_strategy
from .transfer import warm_starts


#: seconds a round's choice may always take (``time_s`` of the strategy's ``propose``)
MIN_CHOOSE_S = 0.2
#: share of the task's last measuring time that a round's choice may take beyond that
CHOOSE_SHARE = 0.1


@dataclass
class MeasureResult:
    """What a runner returns per candidate: ``costs`` (seconds, or cycles on the cycle
    model; one per repeat) or ``error`` (one line)."""

    costs: list = field(default_factory=list)
    error: "str | None" = None

    @property
    def cost(self) -> float:
        return sum(self.costs) / len(self.costs) if self.costs and not self.error else math.inf


@dataclass
class TaskResult:
    """Per task: the default point's cost, the best point and its cost, trials measured,
    the best-so-far cost after each trial (for plots), and the seconds (wall) spent
    choosing candidates (``propose`` and ``observe``) and measuring them (the runner)."""

    task: object
    default_cost: float = math.inf
    best_config: "Config | None" = None
    best_cost: float = math.inf
    trials: int = 0
    curve: list = field(default_factory=list)
    check: "str | None" = None
    choose_s: float = 0.0
    measure_s: float = 0.0


def _config_of(task, values: dict) -> "Config | None":
    try:
        return task.space.point(**values)
    except ValueError:
        return None


def tune(tasks, runner, *, trials: int = 16, log: "TuningLog | None" = None,
         strategy: str = "xgb", batch: int = 4, time_budget_s: "float | None" = None,
         seed: int = 0, on_trial=None, check: bool = True,
         transfer: "list[Record] | None" = None) -> list[TaskResult]:
    """Tune ``tasks`` with up to ``trials`` measured points each (fewer where a space is
    smaller), within ``time_budget_s`` seconds if given.

    Args:
        tasks: ``compiler.autotune.Task`` s (``extract_tasks``).
        runner: see the module docstring.
        trials: per-task trial cap, including trials found in ``log``.
        log: where every trial is appended (and earlier trials are read from).
        strategy: a name of ``search.STRATEGIES`` (``"xgb"`` or ``"random"``).
        batch: candidates proposed and measured per round.
        time_budget_s: seconds the session may take (module docstring: strict).
        seed: of the random proposals.
        on_trial: called as ``on_trial(task_index, record, best_cost)`` after each trial.
        check: call the runner's ``check`` on each task's best point, if it has one.
        transfer: records of earlier logs (any workloads, any targets) to pre-train the cost
            model on; those of a task's workload on another target are warm starts.

    Returns:
        one :class:`TaskResult` per task, in order.

    Raises:
        ValueError: an unknown strategy, or ``trials`` / ``batch`` below 1.
    """
    if trials < 1 or batch < 1:
        raise ArgumentError(f"trials and batch must be >= 1, not {trials} and {batch}")
    search = make_strategy(strategy)
    rng = np.random.default_rng(seed)
    start = time.monotonic()
    deadline = None if time_budget_s is None else start + time_budget_s
    sched = TaskScheduler(tasks, trials)
    results = [TaskResult(t) for t in tasks]
    tried: list[dict] = [{} for _ in tasks]     # config -> cost
    earlier = log.records() if log is not None else []
    search.pretrain(earlier + list(transfer or ()), tasks)
    warm = [warm_starts(list(earlier) + list(transfer or ()), t) for t in tasks]
    for i, t in enumerate(tasks):
        done = [(c, r.cost) for r in earlier if r.key == t.key and r.target == t.target
                for c in [_config_of(t, r.config_values())] if c is not None]
        for c, cost in done:
            _note(results[i], tried[i], c, cost, t.space.default)
        if done:
            search.observe(t, done)
            sched.record_round(i, len(done), results[i].best_cost)
    per_trial: dict = {}        # task index -> seconds per trial of its last round
    measure_s: dict = {}        # task index -> seconds its last round took to measure
    while True:
        i = sched.next_task()
        if i is None:
            break
        t, st = tasks[i], sched.states[i]
        n = 1 if not st.history else min(batch, st.cap - st.trials)
        if deadline is not None:
            n = _fit(n, deadline - time.monotonic(), per_trial.get(i, max(per_trial.values(),
                                                                         default=0.0)))
            if n == 0:
                break
        round_start = time.monotonic()
        cands = [] if t.space.default in tried[i] else [t.space.default]
        cands += [c for c in warm[i] if c not in tried[i] and c not in cands][:n - len(cands)]
        choose_s = max(MIN_CHOOSE_S, CHOOSE_SHARE * measure_s.get(
            i, max(measure_s.values(), default=0.0)))
        if deadline is not None:
            choose_s = max(0.0, min(choose_s, deadline - time.monotonic()))
        cands += search.propose(t, n - len(cands), set(tried[i]) | set(cands), rng, choose_s)
        if not cands:
            sched.states[i].cap = st.trials     # exhausted
            continue
        measure_start = time.monotonic()
        measured = runner.measure(t, cands)
        measure_s[i] = time.monotonic() - measure_start
        results[i].measure_s += measure_s[i]
        obs = []
        for c, m in zip(cands, measured):
            rec = Record(t.key, t.target, dict(c.values), list(m.costs), m.error)
            if log is not None:
                log.append(rec)
            _note(results[i], tried[i], c, m.cost, t.space.default)
            obs.append((c, m.cost))
            if on_trial is not None:
                on_trial(i, rec, results[i].best_cost)
        observe_start = time.monotonic()
        search.observe(t, obs)
        results[i].choose_s += (measure_start - round_start) + (time.monotonic() - observe_start)
        sched.record_round(i, len(cands), results[i].best_cost)
        per_trial[i] = (time.monotonic() - round_start) / len(cands)
    if check and hasattr(runner, "check"):
        for r in results:
            if r.best_config is not None:
                r.check = runner.check(r.task, r.best_config)
    return results


def _fit(n: int, left_s: float, per_trial_s: float) -> int:
    """How many of ``n`` candidates to measure with ``left_s`` seconds left at
    ``per_trial_s`` each: none once the budget is spent, else at least one."""
    if left_s <= 0:
        return 0
    if per_trial_s <= 0:
        return n
    return max(1, min(n, int(left_s / per_trial_s)))


def _note(res: TaskResult, tried: dict, cfg: Config, cost: float, default: Config) -> None:
    tried[cfg] = cost
    res.trials += 1
    if cfg == default:
        res.default_cost = cost
    if cost < res.best_cost:
        res.best_cost, res.best_config = cost, cfg
    res.curve.append(res.best_cost)
