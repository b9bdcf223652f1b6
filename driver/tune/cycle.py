"""The cycle-model runner: accelerator candidates by cycles on ``sim.cycle``.

The model is deterministic, so a candidate is measured once, in this process
(no timing noise to guard against; measurements could run in parallel), and
the tuner's final ``check`` runs the chosen tiling on the functional model
against numpy bit for bit (``measure.check_vta_conv2d``).
"""
from __future__ import annotations

from compiler.autotune.tuner import MeasureResult

from .measure import check_vta_conv2d, measure


class CycleRunner:
    """Runner for ``vta_conv2d`` tasks (see the module docstring)."""

    def measure(self, task, configs) -> list[MeasureResult]:
        out = []
        for c in configs:
            status, value = measure(task.kind, task.payload, c, {})
            out.append(MeasureResult(costs=value) if status == "ok" else MeasureResult(error=value))
        return out

    def check(self, task, config) -> "str | None":
        """None if ``config``'s program is bit-exact against numpy, else why not."""
        return check_vta_conv2d(task.payload, config)
