"""The tuning log: JSON lines, one :class:`Record` per measured trial.

One line::

    {"version": 1, "key": "conv2d_nchw(1x16x14x14,32x16x3x3c->1x32x14x14;float32;...)",
     "target": {"target": "llvm -mtriple=... -mcpu=znver4", "triple": "...",
                "cpu": "znver4", "features": ["+avx2", ...]},
     "config": {"conv_out_block": 16, "ow_tile": 14}, "costs": [1.2e-05, 1.1e-05],
     "error": null, "timestamp": 1764612345.1}

``costs`` are seconds on a CPU, cycles on the accelerator's cycle model
(``target.target == "vta"``); ``error`` a one-line message for a candidate that
failed to build, crashed, hung or computed a wrong result (then ``costs`` is
empty). The log is only ever appended to, one flushed line per trial, so an
interrupted session leaves a valid log and a rerun continues from it.

Reading skips a damaged line, a record of another format version and a line
that is not a record, each with a warning naming the file and the line
number (:class:`TuningLogWarning`).
"""
from __future__ import annotations

import errno
import json
import math
import os
import time
import warnings
from dataclasses import dataclass, field

FORMAT_VERSION = 1


class TuningLogWarning(UserWarning):
    """A line of a tuning log was skipped (damaged, foreign or of another version)."""


def target_record(tgt) -> dict:
    """The log's ``target`` entry of an LLVM ``Target``: its string, triple, CPU name and
    exact feature set (sorted ``+``/``-`` features). Two builds match only if equal."""
    feats = sorted(f for f in tgt.features.split(",") if f)
    return {"target": str(tgt), "triple": tgt.triple, "cpu": tgt.cpu, "features": feats}


def _tuplify(v):
    return tuple(_tuplify(x) for x in v) if isinstance(v, list) else v


@dataclass
class Record:
    """One trial (fields as the module docstring)."""

    key: str
    target: dict
    config: dict
    costs: list = field(default_factory=list)
    error: "str | None" = None
    timestamp: float = field(default_factory=time.time)
    version: int = FORMAT_VERSION

    @property
    def cost(self) -> float:
        """The trial's cost: the mean of ``costs``; ``inf`` for an error."""
        return sum(self.costs) / len(self.costs) if self.costs and not self.error else math.inf

    def config_values(self) -> dict:
        """``config`` with JSON lists turned back into tuples (knob values are hashable)."""
        return {k: _tuplify(v) for k, v in self.config.items()}

    def to_json(self) -> str:
        return json.dumps({"version": self.version, "key": self.key, "target": self.target,
                           "config": self.config, "costs": list(self.costs), "error": self.error,
                           "timestamp": self.timestamp})

    @classmethod
    def from_dict(cls, d: dict) -> "Record":
        """Raises ValueError naming the missing or mistyped field."""
        if not isinstance(d, dict):
            raise ValueError(f"not a JSON object but {type(d).__name__}")
        if d.get("version") != FORMAT_VERSION:
            raise ValueError(f"format version {d.get('version')!r}, this reader takes "
                             f"{FORMAT_VERSION}")
        for name, typ in (("key", str), ("target", dict), ("config", dict), ("costs", list)):
            if not isinstance(d.get(name), typ):
                raise ValueError(f"field {name!r} must be a {typ.__name__}, not {d.get(name)!r}")
        return cls(d["key"], d["target"], d["config"], [float(c) for c in d["costs"]],
                   d.get("error"), float(d.get("timestamp", 0.0)))


class TuningLog:
    """An append-only JSON-lines tuning log at ``path`` (created on the first append)."""

    def __init__(self, path: "str | os.PathLike"):
        self.path = os.fspath(path)

    def append(self, rec: Record) -> None:
        """Append one record as one line, flushed and synced (a crash keeps every line)."""
        parent = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(parent, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(rec.to_json() + "\n")
            f.flush()
            os.fsync(f.fileno())

    def records(self) -> list[Record]:
        """Every valid record, in file order; a missing file has none. Bad lines are
        skipped with a :class:`TuningLogWarning` naming the file and the line."""
        return read_records(self.path)


def read_records(path) -> list[Record]:
    """The records of the log at ``path`` (see :meth:`TuningLog.records`)."""
    path = os.fspath(path)
    if not os.path.exists(path):
        return []
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                out.append(Record.from_dict(json.loads(line)))
            except (ValueError, TypeError) as e:
                warnings.warn(f"{path} line {no}: skipped a line that is not a tuning record of "
                              f"format {FORMAT_VERSION}: {e}", TuningLogWarning, stacklevel=2)
    return out


def best_records(records) -> dict:
    """(key, target json) -> the record of lowest cost (errors never win)."""
    best: dict = {}
    for r in records:
        if r.error or not r.costs:
            continue
        k = (r.key, json.dumps(r.target, sort_keys=True))
        if k not in best or r.cost < best[k].cost:
            best[k] = r
    return best


def distill(src, dst) -> int:
    """Write the best record per (workload, target) of log ``src`` to ``dst`` (replaced);
    returns how many.

    Raises:
        FileNotFoundError: there is no log ``src`` (its ``filename``).
    """
    if not os.path.isfile(src):
        raise FileNotFoundError(errno.ENOENT, "no such tuning log to distill (give a log that "
                                "`vta tune MODEL -o LOG` wrote)", os.fspath(src))
    best = best_records(read_records(src))
    tmp = os.fspath(dst) + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        for r in best.values():
            f.write(r.to_json() + "\n")
    os.replace(tmp, dst)
    return len(best)
