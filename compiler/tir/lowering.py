"""`lower`: a schedule to a PrimFunc ready for code generation."""

from __future__ import annotations

from . import ir
from .pipeline import DEFAULT_PIPELINE, Pass, run_pipeline
from .schedule_ops import schedule_to_func


def lower(sch, args: list, name: str = "main", passes: list[Pass] | None = None,
          check: bool = False) -> ir.PrimFunc:
    """Lower schedule `sch` over `args` (te Tensors and scalar VARs, in parameter order).

    Runs `passes` (default: DEFAULT_PIPELINE) on the loop nest; `check` verifies
    the IR after each pass. The result has the forms listed in `compiler.tir.ir`.
    Raises ScheduleError for schedules that cannot lower (missing arguments,
    unbounded regions, tensorize mismatches).
    """
    func = schedule_to_func(sch, args, name)
    return run_pipeline(func, DEFAULT_PIPELINE if passes is None else passes, check)
