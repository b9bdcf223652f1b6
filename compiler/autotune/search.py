"""Search strategies: which untried points of a task's space to measure next.

``STRATEGIES`` maps a name to a class; each instance serves every task of a
session: ``propose(task, n, tried, rng, time_s=None) -> [Config]`` returns up to
``n`` points of ``task.space`` not in ``tried`` (spending about ``time_s`` seconds
choosing them, if given), ``observe(task, results)`` learns from
``[(config, cost)]`` (cost ``inf`` for an error), and ``pretrain(records, tasks)``
learns from the log records of workloads other than ``tasks`` before the search
starts (transfer: ``transfer.py``).

* ``random``: uniform over the untried points (the baseline).
* ``xgb``: a :class:`~compiler.autotune.cost_model.CostModel` ranks candidates
  found by simulated annealing over knob indices (TVM's ``SimulatedAnnealingOptimizer``
  idea: a move changes one knob to a neighbouring candidate; a worse point is
  accepted with probability ``exp(delta / T)``, ``T`` falling linearly to 0); spaces
  of at most 256 points skip the annealing and score every untried point already
  featurized plus up to ``pool`` (64) more, in random order (featurizing a CPU
  candidate builds its loop nest: hundredths to tenths of a second each; so it
  stops at the tuner's time limit, a tenth of the time the task's candidates take
  to measure, and as features are cached per config, each round scores a larger
  share of the space: choosing never costs much next to measuring). One
  proposal in ``eps`` is random so the model keeps seeing new regions. Before the
  model can rank (too few results, or no workload with two different costs yet) it
  proposes the untried neighbours of the task's best point (one knob one candidate
  away; the default point is a hand-picked schedule, so its neighbourhood beats a
  uniform draw: replaying the measured costs of 696 ResNet-18 points from earlier
  sessions, the best after 5 trials per task was 1.063x the best recorded, against
  1.084x with random first proposals; 12 seeds), then random points. The model is
  one per task kind, shared by the session's tasks and pre-trained from earlier
  logs, so a workload no log covers is guided from its first proposals.
"""
from __future__ import annotations

import itertools
import math
import time

import numpy as np

from compiler.graph_lower.space import Config, ConfigSpace
from vta_hw.errors import ArgumentError

from .cost_model import CostModel
from . import transfer
from .features import featurize

_ENUMERATE = 4096   # spaces up to this size are listed; larger ones are sampled


def point_at(space: ConfigSpace, idx) -> Config:
    """The point whose knob ``i`` takes candidate ``idx[i]``."""
    return Config(tuple((k.name, k.candidates[i]) for k, i in zip(space.knobs, idx)))


def index_of(space: ConfigSpace, cfg: Config) -> tuple:
    return tuple(k.candidates.index(v) for k, (_, v) in zip(space.knobs, cfg.values))


def neighbours(space: ConfigSpace, cfg: Config, n: int, tried, rng) -> list[Config]:
    """Up to ``n`` distinct untried points one knob step from ``cfg`` (a knob moved to the
    candidate before or after its own), in random order."""
    idx = index_of(space, cfg)
    near = []
    for k, size in enumerate(len(kn.candidates) for kn in space.knobs):
        for step in (-1, 1):
            if 0 <= idx[k] + step < size:
                c = point_at(space, idx[:k] + (idx[k] + step,) + idx[k + 1:])
                if c not in tried:
                    near.append(c)
    return [near[i] for i in rng.permutation(len(near))[:n]]


def random_points(space: ConfigSpace, n: int, tried, rng) -> list[Config]:
    """Up to ``n`` distinct untried points, uniformly."""
    if space.size <= _ENUMERATE:
        pool = [c for c in (point_at(space, i) for i in itertools.product(
            *(range(len(k.candidates)) for k in space.knobs))) if c not in tried]
        pick = rng.permutation(len(pool))[:n]
        return [pool[i] for i in pick]
    out: list = []
    for _ in range(50 * n):
        c = point_at(space, [int(rng.integers(len(k.candidates))) for k in space.knobs])
        if c not in tried and c not in out:
            out.append(c)
            if len(out) == n:
                break
    return out


class RandomSearch:
    """Uniform sampling of untried points."""

    def propose(self, task, n, tried, rng, time_s=None):
        return random_points(task.space, n, tried, rng) if n > 0 else []

    def observe(self, task, results):
        pass

    def pretrain(self, records, tasks):
        pass


class XGBSearch:
    """Cost-model-guided simulated annealing (module docstring)."""

    def __init__(self, eps: float = 0.25, steps: int = 200, chains: int = 16, pool: int = 64):
        try:
            import xgboost  # noqa: F401
        except ImportError:
            raise ImportError("search strategy 'xgb' needs the xgboost package: pip install "
                              "-e '.[tune]' (or use strategy 'random')") from None
        self.eps, self.steps, self.chains, self.pool = eps, steps, chains, pool
        self.models: dict = {}        # task kind -> CostModel (shared across tasks)
        self.best: dict = {}          # task key -> (cost, config) of its best result

    def _model(self, task) -> CostModel:
        return self.models.setdefault(task.kind, CostModel())

    def observe(self, task, results):
        for c, cost in results:
            if cost < self.best.get(task.key, (math.inf, None))[0]:
                self.best[task.key] = (cost, c)
        self._model(task).update(task.key, [featurize(task, c) for c, _ in results],
                                 [cost for _, cost in results])

    def pretrain(self, records, tasks):
        """Learn from the ``records`` of workloads other than ``tasks`` (one fit per kind)."""
        kinds = set()
        for task, results in transfer.samples(records, tasks):
            self._model(task).add(task.key, [featurize(task, c) for c, _ in results],
                                  [cost for _, cost in results])
            kinds.add(task.kind)
        for k in kinds:
            self.models[k].fit()

    def propose(self, task, n, tried, rng, time_s=None):
        """Up to ``n`` untried points; featurizing candidates stops after ``time_s`` seconds
        (points already featurized are scored first; the rest of ``n`` is random). Before
        the model can rank: the best point's neighbours, then random points."""
        model = self._model(task)
        if n <= 0:
            return []
        if not model.trained:           # nothing to rank by: near the best point so far
            return self._near_best(task, n, tried, rng)
        end = math.inf if time_s is None else time.monotonic() + time_s
        n_rand = int(round(n * self.eps))
        space = task.space
        if space.size <= 256:           # small: every featurized untried point, and more
            untried = random_points(space, space.size, tried, rng)
            pool = [c for c in untried if c in task.features]     # featurized: free to score
            for c in [c for c in untried if c not in task.features][:self.pool]:
                if time.monotonic() >= end:
                    break
                featurize(task, c)
                pool.append(c)
        else:
            pool = self._anneal(task, model, n * 4, tried, rng, end)
        if not pool:
            return random_points(space, n, tried, rng)
        scores = model.predict([featurize(task, c) for c in pool])
        ranked = [pool[i] for i in np.argsort(-scores)]
        chosen = ranked[:n - n_rand]
        rest = [c for c in ranked[n - n_rand:]]
        if rest and n_rand:
            chosen += [rest[i] for i in rng.permutation(len(rest))[:n_rand]]
        if len(chosen) < n:
            chosen += random_points(space, n - len(chosen), set(tried) | set(chosen), rng)
        return chosen

    def _near_best(self, task, n, tried, rng) -> list[Config]:
        best = self.best.get(task.key, (math.inf, None))[1]
        near = [] if best is None else neighbours(task.space, best, n, tried, rng)
        return near + random_points(task.space, n - len(near), set(tried) | set(near), rng)

    def _anneal(self, task, model, keep, tried, rng, end=math.inf) -> list[Config]:
        space = task.space
        sizes = [len(k.candidates) for k in space.knobs]
        states = [index_of(space, c) for c in random_points(space, self.chains, (), rng)]
        score = lambda idxs: model.predict([featurize(task, point_at(space, i)) for i in idxs])  # noqa: E731
        cur = score(states)
        seen: dict = {}
        for step in range(self.steps // 10):
            if time.monotonic() >= end:
                break
            temp = 1.0 - step / (self.steps // 10)
            moves = []
            for s in states:
                k = int(rng.integers(len(sizes)))
                m = list(s)
                m[k] = int(np.clip(m[k] + rng.choice((-1, 1)), 0, sizes[k] - 1))
                moves.append(tuple(m))
            new = score(moves)
            for j, (m, v) in enumerate(zip(moves, new)):
                seen[m] = v
                if v > cur[j] or rng.random() < math.exp((v - cur[j]) / max(temp, 1e-3)):
                    states[j], cur[j] = m, v
        ranked = sorted(seen, key=lambda m: -seen[m])
        return [c for c in (point_at(space, m) for m in ranked) if c not in tried][:keep]


#: name -> strategy class
STRATEGIES = {"random": RandomSearch, "xgb": XGBSearch}


def make_strategy(name: str):
    """An instance of strategy ``name``. Raises ValueError naming the strategies."""
    if name not in STRATEGIES:
        raise ArgumentError(f"search strategy must be one of {sorted(STRATEGIES)}, not {name!r}")
    return STRATEGIES[name]()
