"""Pinned logs: a tuning log that sets chosen knobs on every workload of a model that has them.

For forcing one choice across a model without tuning (Winograd on every 3x3 stride-1
conv: ``pin_log(model, "wino.jsonl", algorithm="winograd2")``), then building with
``build_model(model, tuning_log="wino.jsonl")``. Each record is the workload's default
point with those knobs changed, logged with cost 0 so that it is the best record of its
workload in that log.
"""
from __future__ import annotations

from .record import Record, TuningLog
from .extract import extract_tasks


def pin_log(model, path, target: str = "llvm", **knobs) -> int:
    """Append to the log at ``path`` one record per task of ``model`` whose space has every
    knob in ``knobs`` and admits the values. Returns how many workloads were pinned.

    Raises:
        ValueError: no knobs given.
    """
    if not knobs:
        raise ValueError("pin_log needs at least one knob=value, e.g. algorithm='winograd2'")
    log, n = TuningLog(path), 0
    for task in extract_tasks(model, target):
        names = {k.name for k in task.space.knobs}
        if not set(knobs) <= names:
            continue
        try:
            cfg = task.space.point(**knobs)
        except ValueError:
            continue
        log.append(Record(task.key, task.target, cfg.as_dict(), [0.0]))
        n += 1
    return n
