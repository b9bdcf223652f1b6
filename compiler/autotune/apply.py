"""Applying tuning logs to a build: the best record per workload whose target fits.

:func:`load_tuning` reads the given logs and the ones shipped in
``compiler/autotune/logs/`` (TVM's TopHub idea: pre-tuned logs for the machines
this project is built and tested on, applied automatically). For each workload
a build meets, :meth:`TuningContext.config_for_node` gives the config of the best
record for the build's exact target (triple, CPU name and code features:
``isa_class.exact_key``); where there is none, on a CPU, the best (lowest cost) record
of a *sibling*, a CPU of the same ISA class (vector width, dot-product, bf16 and matrix
units: ``isa_class.isa_class``); never one of another class. Else None: the default
point. A record whose config is not a point of the workload's space today (a knob
renamed, a value dropped) is ignored. ``covered`` / ``workloads`` count what a build met;
the report counts the siblings' records apart, per CPU.
Accelerator builds ask :meth:`TuningContext.vta_tiling_for` for each conv's
tiling (records of target ``{"target": "vta", "config": preset}``); GPU builds ask
:meth:`TuningContext.config_for_gpu` for each group (records of the device the
build machine has, ``gpu_task.gpu_target_record``). CPU builds ask
:meth:`TuningContext.layout_chooser` for the graph tuner's per-conv layouts (the latest
``graph_layout`` record of the graph's fingerprint and the exact target; a sibling's
layout decision is not applied: it was chosen over that CPU's measured layer costs).
"""
from __future__ import annotations

import errno
import json
import os
from collections import Counter
from pathlib import Path

from .isa_class import describe_class, exact_key, isa_class
from .record import LayoutRecord, best_records, read_log, target_record

#: the shipped logs (``*.jsonl``), applied under the same matching rule
SHIPPED_DIR = Path(__file__).parent / "logs"


class TuningContext:
    """Best configs by (workload key, exact target) and by (workload key, ISA class);
    consulted by ``compile_graph``."""

    def __init__(self, records, sources=(), layouts=(), origin=None, given=None):
        self.best = best_records(records, by=exact_key)
        self.class_best = best_records(records, by=isa_class)
        self.layouts = {(r.graph, exact_key(r.target)): r for r in layouts}
        self.sources = list(sources)
        self.origin = origin or {}           # id(record) -> the log it came from
        self.given = list(sources) if given is None else list(given)
        self.workloads: set = set()
        self.covered: set = set()
        self.targets: set = set()            # the targets (json) the build asked about
        self.applied: dict = {}              # workload key -> the record applied
        self.layout_applied: "LayoutRecord | None" = None

    def __bool__(self) -> bool:
        return bool(self.best) or bool(self.layouts)

    def layout_chooser(self, target):
        """``choose(layout_sites) -> layouts | None`` for ``assign_layout`` on LLVM
        ``target`` (a ``Target``): the latest decision for that graph and target, or None
        (no decision: the graph keeps today's layouts). Remembers what it applied."""
        rec = target_record(target)

        def choose(sites):
            r = self.layouts.get((sites.key, exact_key(rec)))
            self.layout_applied = r
            return None if r is None else r.layouts
        return choose

    def record_for(self, key: str, target: dict):
        """The record that applies to workload ``key`` on log target entry ``target``: the
        best of the exact target, else the best of its ISA class (module docstring), or
        None."""
        self.targets.add(json.dumps(target, sort_keys=True))
        r = self.best.get((key, exact_key(target)))
        cls = isa_class(target)
        if r is None and cls is not None:
            r = self.class_best.get((key, cls))
        return r

    def config_for_node(self, node, target):
        """The tuned ``Config`` of FUSED ``node`` on LLVM ``target`` (a ``Target``), or None
        (no master, no matching record, or a record outside today's space)."""
        from .task import master_of, workload_key
        m = master_of(node, target)
        if m is None:
            return None
        impl, w = m
        space = impl.space(w)
        if space.size <= 1:
            return None
        return self._point(space, workload_key(impl, w), target_record(target))

    def config_for_gpu(self, node, kdef, target: "dict | None"):
        """The tuned ``Config`` of FUSED ``node`` (lowered as ``kdef``) on the GPU whose log
        target is ``target`` (``gpu_task.gpu_target_record``; None: no device here), or None
        (no matching record, a one-point space or a record outside today's space)."""
        from compiler.graph_lower.gpu import gpu_space

        from .gpu_task import gpu_workload_key
        space = gpu_space(kdef)
        if space.size <= 1:
            return None
        return self._point(space, gpu_workload_key(node), target)

    def _point(self, space, key: str, target: "dict | None"):
        """The ``Config`` of ``space`` the best record for ``key`` on ``target`` names (the
        workload counted, and counted covered when one applies), or None (no target, no
        matching record, or a record outside today's space)."""
        self.workloads.add(key)
        r = self.record_for(key, target) if target is not None else None
        if r is None:
            return None
        try:
            cfg = space.point(**r.config_values())
        except ValueError:
            return None
        self.covered.add(key)
        self.applied[key] = r
        return cfg

    def vta_tiling_for(self, cfg):
        """``tiling_for(data_shape, kernel_shape, strides, padding, shift) -> Tiling | None``
        for the accelerator convs of preset ``cfg`` (``compiler.quant.build_plan``): the
        tuned tiling of that workload if a record exists and it fits the buffers."""
        from compiler.topi.vta.environment import Env
        from compiler.topi.vta.tiling import Conv2dShape, Tiling, fits

        from .task import _pair, vta_conv2d_key, vta_target
        env, target = Env(cfg), vta_target(cfg)

        def tiling_for(data_shape, kernel_shape, strides, padding, shift):
            key = vta_conv2d_key(cfg, data_shape, kernel_shape, strides, padding, shift)
            self.workloads.add(key)
            r = self.record_for(key, target)
            vals = r.config_values() if r is not None else {}
            if "tiling" not in vals:
                return None
            (N, C, H, W), (O, _, KH, KW) = data_shape, kernel_shape
            s = Conv2dShape(-(-N // env.BATCH), -(-C // env.BLOCK_IN), H, W,
                            -(-O // env.BLOCK_OUT), KH, KW, *_pair(strides), *_pair(padding))
            try:
                t = Tiling(*vals["tiling"])
            except TypeError:
                return None
            if not fits(t, s, cfg, 1 + int(not isinstance(shift, int))):
                return None
            self.covered.add(key)
            self.applied[key] = r
            return t
        return tiling_for

    def report(self) -> dict:
        """``{"workloads": met, "covered": with a tuned record, "logs": [paths]}`` (the
        logs the caller gave, and the shipped ones that supplied an applied record), with
        ``"by_log"``: how many of the covered workloads each of those logs supplied (a
        workload two logs hold counts for the one whose record applied: the lower cost),
        plus ``"sibling"``: of the covered workloads, how many records of a sibling CPU
        (same ISA class, another CPU or code feature set) applied, per its CPU name, with
        ``"sibling_class"``: the class (``isa_class.describe_class``), if any did;
        ``"layouts"``: the per-conv layouts applied from a graph decision, if one was,
        ``"other_shapes"``: :meth:`other_shapes`, if any, and ``"other_targets"``:
        :meth:`other_targets`, if any."""
        supplied: dict = {}
        for r in self.applied.values():
            p = self.origin.get(id(r))
            supplied[p] = supplied.get(p, 0) + 1
        logs = list(self.given) + [p for p in self.sources if p in supplied and p not in self.given]
        out = {"workloads": len(self.workloads), "covered": len(self.covered), "logs": logs,
               "by_log": {p: supplied.get(p, 0) for p in logs}}
        exact = {exact_key(t) for t in self._built()}
        siblings = [r for r in self.applied.values() if exact_key(r.target) not in exact]
        if siblings:
            out["sibling"] = dict(Counter(r.target.get("cpu") for r in siblings))
            out["sibling_class"] = describe_class(isa_class(siblings[0].target))
        other = self.other_shapes()
        if other:
            out["other_shapes"] = other
        targets = self.other_targets()
        if targets:
            out["other_targets"] = targets
        if self.layout_applied is not None:
            out["layouts"] = [list(c) for c in self.layout_applied.layouts]
        return out

    def _built(self) -> list:
        """The log target entries the build asked about."""
        return [json.loads(t) for t in sorted(self.targets)]

    def _fits(self, target: dict) -> bool:
        """Whether records of log target entry ``target`` may apply to this build: its exact
        target or ISA class is one the build asked about."""
        built = self._built()
        cls = isa_class(target)
        return exact_key(target) in {exact_key(t) for t in built} or \
            (cls is not None and cls in {isa_class(t) for t in built})

    def other_targets(self) -> dict:
        """``{"logs": {path: [target, ...]}, "build": [target, ...]}`` (each target a log
        ``target`` dict): the logs the caller gave whose records are all for targets this
        build never asked about, nor of their ISA class (another preset, class of CPU or
        device), and the targets it did ask about. Empty if no given log is such."""
        held: dict = {}
        for r in self.best.values():
            p = self.origin.get(id(r))
            if p in self.given:
                held.setdefault(p, {})[json.dumps(r.target, sort_keys=True)] = r.target
        logs = {p: [ts[t] for t in sorted(ts)] for p, ts in held.items()
                if self.targets and not any(self._fits(t) for t in ts.values())}
        if not logs:
            return {}
        return {"logs": logs, "build": self._built()}

    def other_shapes(self) -> list[str]:
        """The op kinds (a workload key's name: ``conv2d_nchw``, ``vta_conv2d``...) of which
        the build met uncovered workloads while the logs the caller gave hold records of
        that kind, for this build's target or its ISA class, for none of the build's
        workloads: the log was tuned for other shapes (a different ``--input-shape`` or batch;
        records of another target are :meth:`other_targets`). Sorted."""
        given = set(self.given)
        logged: dict = {}
        for (key, _), r in self.best.items():
            if self.origin.get(id(r)) in given and self._fits(r.target):
                logged.setdefault(key.partition("(")[0], set()).add(key)
        missed = {k.partition("(")[0] for k in self.workloads - self.covered}
        return sorted(k for k in missed if logged.get(k) and not logged[k] & self.workloads)


def load_tuning(logs=(), shipped: bool = True, shipped_dir=None) -> TuningContext:
    """A :class:`TuningContext` over the records of ``logs`` (paths) and, if ``shipped``,
    every ``*.jsonl`` in ``shipped_dir`` (default :data:`SHIPPED_DIR`).

    Raises:
        FileNotFoundError: a given log does not exist (names it).
    """
    if isinstance(logs, (str, os.PathLike)):
        logs = [logs]
    paths = []
    for p in logs:
        if not os.path.exists(p):
            raise FileNotFoundError(errno.ENOENT, f"tuning log {os.fspath(p)!r} does not exist; "
                                    "write one with `vta tune MODEL -o LOG`", os.fspath(p))
        paths.append(os.fspath(p))
    given = list(paths)
    if shipped:
        d = Path(shipped_dir) if shipped_dir is not None else SHIPPED_DIR
        paths += sorted(str(p) for p in d.glob("*.jsonl")) if d.is_dir() else []
    logs = [read_log(p) for p in paths]
    origin = {id(r): p for p, log in zip(paths, logs) for r in log["trial"]}
    return TuningContext([r for log in logs for r in log["trial"]], paths,
                         [r for log in logs for r in log[LayoutRecord.KIND]], origin, given)
