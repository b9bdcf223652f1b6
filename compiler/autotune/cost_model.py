"""The learned cost model: XGBoost on loop-IR features, trained online.

Samples are ``(group, features, cost)``; a group is one workload (a task key),
and targets are normalised per group when the model is fit: the group's best
cost divided by the sample's (1 for the group's best, towards 0 for slow
points, 0 for an error). Costs of different workloads differ by orders of
magnitude, so raw costs would not transfer; per-workload relative throughput
does, which is how one model learns across the tasks of a kind and from the
records of earlier logs (AutoTVM's ``XGBoostCostModel`` normalises the same
way, by each task's best throughput). Normalising at fit time, not when a
sample arrives, keeps every sample relative to its group's current best.

Until it has ``min_samples`` results, and a workload with two different costs
(each target 1 otherwise: nothing to learn), it knows nothing and ``predict``
returns None.
"""
from __future__ import annotations

import math

import numpy as np


class CostModel:
    """``update(group, features, costs)`` then ``predict(features) -> scores`` (higher
    is faster; comparable within one workload)."""

    def __init__(self, min_samples: int = 8, seed: int = 0):
        self.min_samples = min_samples
        self.seed = seed
        self._x: list = []
        self._costs: list = []
        self._groups: list = []
        self._model = None

    @property
    def samples(self) -> int:
        return len(self._x)

    def add(self, group: str, features: list, costs: list) -> None:
        """Add samples of workload ``group`` (costs in any unit, ``inf`` for an error)
        without retraining."""
        self._x.extend(features)
        self._costs.extend(costs)
        self._groups.extend([group] * len(costs))

    def update(self, group: str, features: list, costs: list) -> None:
        """:meth:`add` then retrain (a few dozen trees: milliseconds)."""
        self.add(group, features, costs)
        self.fit()

    def targets(self) -> np.ndarray:
        """Per-sample targets: best cost of the sample's group / its cost (0 for errors)."""
        best: dict = {}
        for g, c in zip(self._groups, self._costs):
            if math.isfinite(c):
                best[g] = min(best.get(g, math.inf), c)
        return np.asarray([best[g] / c if math.isfinite(c) and c > 0 else 0.0
                           for g, c in zip(self._groups, self._costs)], np.float32)

    def fit(self) -> None:
        """Retrain on every sample (nothing before ``min_samples``)."""
        import xgboost as xgb
        if len(self._x) < self.min_samples:
            return
        y = self.targets()
        if y.min() == y.max():          # no contrast yet (each workload's one result): no model
            return
        self._model = xgb.XGBRegressor(n_estimators=60, max_depth=5, learning_rate=0.2,
                                       subsample=0.9, random_state=self.seed, n_jobs=1,
                                       verbosity=0)
        self._model.fit(np.asarray(self._x, np.float32), y)

    @property
    def trained(self) -> bool:
        return self._model is not None

    def predict(self, features: list) -> "np.ndarray | None":
        """Predicted scores, or None before ``min_samples`` results."""
        if self._model is None:
            return None
        return self._model.predict(np.asarray(features, np.float32))
