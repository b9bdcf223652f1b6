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
number (:class:`TuningLogWarning`; the first five, then a count). A file of which no
line is a record is not a tuning log (:class:`NotATuningLogError`), and
:func:`check_log` refuses, before any append, a file whose first line is none.

Besides trials, a log holds graph-level decisions, told apart by a ``kind`` field
(absent: a trial; ``RECORD_KINDS``). ``"graph_layout"`` (:class:`LayoutRecord`, its own
``version``) is the graph tuner's choice of every conv's layout for one model and target::

    {"kind": "graph_layout", "version": 1, "graph": "3f0c...", "target": {...},
     "layouts": [[0, 0], [16, 8], ...], "estimate": {"dp_s": ..., ...}, "timestamp": ...}

A reader that predates a kind skips its lines with a warning (a graph record has no
``key``), as it does any foreign line.
"""
from __future__ import annotations

import errno
import json
import math
import os
import time
import warnings
from dataclasses import dataclass, field

from vta_hw.errors import VtaError

FORMAT_VERSION = 1


class TuningLogWarning(UserWarning):
    """A line of a tuning log was skipped (damaged, foreign or of another version)."""


def target_record(tgt) -> dict:
    """The log's ``target`` entry of an LLVM ``Target``: its string, triple, CPU name and
    feature set (sorted ``+``/``-`` features). A build applies a record whose triple, CPU
    and code features equal its own, else one of its ISA class (``isa_class.py``)."""
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

    def layout_records(self) -> list[LayoutRecord]:
        """The graph-level layout decisions in the log, in file order."""
        return read_log(self.path)[LayoutRecord.KIND]

    def records(self) -> list[Record]:
        """Every valid record, in file order; a missing file has none. Bad lines are
        skipped with a :class:`TuningLogWarning` naming the file and the line."""
        return read_records(self.path)


@dataclass
class LayoutRecord:
    """The graph tuner's layout decision (module docstring): per conv site of the graph
    with fingerprint ``graph`` (``compiler.graph.passes.assign_layout.LayoutSites.key``),
    its ``[in block, out block]`` (0: NCHW); ``estimate`` holds the estimated costs in
    seconds behind it."""

    graph: str
    target: dict
    layouts: list
    estimate: dict = field(default_factory=dict)
    timestamp: float = field(default_factory=time.time)

    KIND = "graph_layout"
    VERSION = 1

    def to_json(self) -> str:
        return json.dumps({"kind": self.KIND, "version": self.VERSION, "graph": self.graph,
                           "target": self.target, "layouts": [list(c) for c in self.layouts],
                           "estimate": self.estimate, "timestamp": self.timestamp})

    @classmethod
    def from_dict(cls, d: dict) -> "LayoutRecord":
        """Raises ValueError naming the bad version or field."""
        if d.get("version") != cls.VERSION:
            raise ValueError(f"{cls.KIND} format version {d.get('version')!r}, this reader "
                             f"takes {cls.VERSION}")
        for name, typ in (("graph", str), ("target", dict), ("layouts", list)):
            if not isinstance(d.get(name), typ):
                raise ValueError(f"field {name!r} must be a {typ.__name__}, not {d.get(name)!r}")
        if not all(isinstance(c, list) and len(c) == 2 and all(isinstance(b, int) for b in c)
                   for c in d["layouts"]):
            raise ValueError(f"field 'layouts' must hold [in block, out block] int pairs, not "
                             f"{d['layouts']!r}")
        return cls(d["graph"], d["target"], [tuple(c) for c in d["layouts"]],
                   dict(d.get("estimate") or {}), float(d.get("timestamp", 0.0)))


#: the ``kind`` field of a log line -> the class that reads it (absent: a trial)
RECORD_KINDS = {"trial": Record, LayoutRecord.KIND: LayoutRecord}


#: per-line warnings one read of a damaged log gives at most; the rest are counted in one
MAX_LINE_WARNINGS = 5


class NotATuningLogError(VtaError, ValueError):
    """A file given as a tuning log holds lines, but not tuning records (a model, an .npz,
    any other text): reading it would skip every line, appending to it would damage it."""


def _parse_line(line: str):
    """The record of one log line (a ``RECORD_KINDS`` class); ValueError/TypeError if none."""
    d = json.loads(line)
    kind = d.get("kind", "trial") if isinstance(d, dict) else "trial"
    if kind not in RECORD_KINDS:
        raise ValueError(f"record kind {kind!r} is unknown to this reader (kinds: "
                         f"{sorted(RECORD_KINDS)})")
    return RECORD_KINDS[kind].from_dict(d)


def _lines(path):
    """(line number, text) of the non-empty lines of the file at ``path``."""
    with open(path, encoding="utf-8", errors="replace") as f:
        for no, line in enumerate(f, 1):
            if line.strip():
                yield no, line


def check_log(path, first_line: bool = False) -> None:
    """Check that the file at ``path``, if it exists and holds any line, is a tuning log: some
    line is a record (``first_line``: its first non-empty line is one, the check before
    appending, so a model or an .npz given as the log is never written to). Stops at the first
    record; warns nothing.

    Raises:
        NotATuningLogError: no line (or not the first) is a record; names the file, the first
            bad line and why.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        return
    first = None
    for no, line in _lines(path):
        try:
            _parse_line(line)
            return
        except (ValueError, TypeError) as e:
            first = first or (no, e)
            if first_line:
                break
    if first is not None:
        what = "its first line is not a tuning record" if first_line else \
            "no line is a tuning record"
        raise NotATuningLogError(f"{path}: not a tuning log ({what}; line {first[0]}: "
                                 f"{str(first[1])[:120]})")


def read_log(path) -> dict:
    """Every valid line of the log at ``path`` by kind: ``{"trial": [Record...],
    "graph_layout": [LayoutRecord...]}`` in file order; bad lines and unknown kinds are
    skipped with a :class:`TuningLogWarning` naming the file and the line (the first
    ``MAX_LINE_WARNINGS``, then one warning counting the rest).

    Raises:
        NotATuningLogError: the file holds lines but none is a record.
    """
    path = os.fspath(path)
    out: dict = {k: [] for k in RECORD_KINDS}
    if not os.path.exists(path):
        return out
    bad = []
    for no, line in _lines(path):
        try:
            rec = _parse_line(line)
        except (ValueError, TypeError) as e:
            bad.append((no, e))
            continue
        out["trial" if isinstance(rec, Record) else rec.KIND].append(rec)
    if bad and not any(out.values()):
        raise NotATuningLogError(f"{path}: not a tuning log (no line is a tuning record; line "
                                 f"{bad[0][0]}: {str(bad[0][1])[:120]})")
    for no, e in bad[:MAX_LINE_WARNINGS]:
        warnings.warn(f"{path} line {no}: skipped a line that is not a tuning record of "
                      f"format {FORMAT_VERSION}: {e}", TuningLogWarning, stacklevel=3)
    if len(bad) > MAX_LINE_WARNINGS:
        warnings.warn(f"{path}: skipped {len(bad) - MAX_LINE_WARNINGS} more lines that are not "
                      "tuning records", TuningLogWarning, stacklevel=3)
    return out


def read_records(path) -> list[Record]:
    """The trial records of the log at ``path`` (see :meth:`TuningLog.records`)."""
    return read_log(path)["trial"]


def _target_json(target: dict) -> str:
    return json.dumps(target, sort_keys=True)


def best_records(records, by=_target_json) -> dict:
    """(key, ``by(target)``) -> the record of lowest cost (errors never win); ``by`` groups
    targets (default: the whole target entry as JSON; ``isa_class.exact_key`` and
    ``isa_class.isa_class`` group them as builds match them). Records ``by`` maps to None
    are left out."""
    best: dict = {}
    for r in records:
        if r.error or not r.costs:
            continue
        group = by(r.target)
        if group is None:
            continue
        k = (r.key, group)
        if k not in best or r.cost < best[k].cost:
            best[k] = r
    return best


def distill(src, dst) -> int:
    """Write the best record per (workload, target) and the latest layout decision per
    (graph, target) of log ``src`` to ``dst`` (replaced); returns how many.

    Raises:
        FileNotFoundError: there is no log ``src`` (its ``filename``).
        NotATuningLogError: ``src`` holds no record, or ``dst`` exists and is not a tuning
            log (a model given as ``dst`` is never replaced).
    """
    if not os.path.isfile(src):
        raise FileNotFoundError(errno.ENOENT, "no such tuning log to distill (give a log that "
                                "`vta tune MODEL -o LOG` wrote)", os.fspath(src))
    check_log(dst, first_line=True)
    log = read_log(src)
    best = best_records(log["trial"])
    latest = {(r.graph, json.dumps(r.target, sort_keys=True)): r for r in log[LayoutRecord.KIND]}
    tmp = os.fspath(dst) + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        for r in list(best.values()) + list(latest.values()):
            f.write(r.to_json() + "\n")
    os.replace(tmp, dst)
    return len(best) + len(latest)
