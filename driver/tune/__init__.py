"""The tuner's runners: build and measure candidates for ``compiler.autotune.tune``.

* :class:`LocalRunner` (``local.py``): a batch's candidates built at once in
  ``build_jobs`` worker processes (``build.py``), then timed one at a time in
  another (CPU timings: warm-up, repeats, output checked against the default
  point); a candidate that fails to build, crashes or hangs is recorded as an
  error and its worker is restarted (``process.py``).
* :class:`CycleRunner` (``cycle.py``): accelerator candidates by cycles on the cycle
  model (deterministic), with a bit-exact check of the chosen one.
* :class:`DaskRunner` (``cluster.py``): the same measurements on a Dask cluster
  (``distributed``), one measurement per worker at a time.

The measurement itself, per task kind, is one registry: ``measure.MEASURES``.
"""
from .cycle import CycleRunner
from .cluster import DaskRunner
from .local import LocalRunner

__all__ = ["CycleRunner", "DaskRunner", "LocalRunner"]
