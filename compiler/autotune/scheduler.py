"""The task scheduler: which task the next batch of trials goes to.

Every task gets one round first (the tuner makes it its default point alone). Then the
next round goes to the task whose estimated end-to-end gain is largest:
``weight x best cost x expected relative improvement``, where the expected
improvement is the task's relative gain over its last two rounds (at least a
floor that shrinks with the trials spent, so a task that stalls is revisited
only when nothing else pays). A task whose space is exhausted or whose trial
cap is reached is never picked (TVM's gradient task scheduler, simplified).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class TaskState:
    """Bookkeeping of one task: trials spent and best cost after each round."""

    cap: int
    trials: int = 0
    history: list = field(default_factory=list)   # best cost after each round

    @property
    def best(self) -> float:
        return self.history[-1] if self.history else math.inf


class TaskScheduler:
    """Picks tasks by estimated gain (module docstring)."""

    def __init__(self, tasks, trials_per_task: int):
        self.tasks = tasks
        self.states = [TaskState(min(trials_per_task, t.space.size)) for t in tasks]

    def done(self, i: int) -> bool:
        return self.states[i].trials >= self.states[i].cap

    def record_round(self, i: int, n_trials: int, best: float) -> None:
        st = self.states[i]
        st.trials += n_trials
        st.history.append(best)

    def gain(self, i: int) -> float:
        st, t = self.states[i], self.tasks[i]
        if not math.isfinite(st.best):
            return math.inf
        h = st.history
        recent = (h[-3] - h[-1]) / h[-3] if len(h) >= 3 and math.isfinite(h[-3]) else 0.0
        floor = 0.05 / (1 + st.trials / 8)
        return t.weight * st.best * max(recent, floor)

    def next_task(self) -> "int | None":
        """The task to tune next, or None when every task is done."""
        open_ = [i for i in range(len(self.tasks)) if not self.done(i)]
        if not open_:
            return None
        fresh = [i for i in open_ if not self.states[i].history]
        if fresh:
            return fresh[0]
        return max(open_, key=self.gain)
