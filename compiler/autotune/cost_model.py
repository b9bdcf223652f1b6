"""The learned cost model: XGBoost on loop-IR features, trained online.

Targets are per-task normalised throughputs (the task's best cost divided by the
candidate's, 0 for an error), so one model learns across the tasks of a kind
and carries over from earlier logs (TVM's ``XGBModel`` idea, with a plain
regression objective). Until it has ``min_samples`` results it knows nothing and
``predict`` returns None.
"""
from __future__ import annotations

import numpy as np


class CostModel:
    """``update(features, scores)`` then ``predict(features) -> scores`` (higher is faster)."""

    def __init__(self, min_samples: int = 8, seed: int = 0):
        self.min_samples = min_samples
        self.seed = seed
        self._x: list = []
        self._y: list = []
        self._model = None

    def update(self, features: list, scores: list) -> None:
        """Add samples and retrain (a few dozen trees: milliseconds)."""
        import xgboost as xgb
        self._x.extend(features)
        self._y.extend(scores)
        if len(self._x) < self.min_samples:
            return
        self._model = xgb.XGBRegressor(n_estimators=60, max_depth=5, learning_rate=0.2,
                                       subsample=0.9, random_state=self.seed, n_jobs=1,
                                       verbosity=0)
        self._model.fit(np.asarray(self._x, np.float32), np.asarray(self._y, np.float32))

    @property
    def trained(self) -> bool:
        return self._model is not None

    def predict(self, features: list) -> "np.ndarray | None":
        """Predicted scores, or None before ``min_samples`` results."""
        if self._model is None:
            return None
        return self._model.predict(np.asarray(features, np.float32))
