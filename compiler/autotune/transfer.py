"""Transfer: train the cost model on the records of earlier logs before searching.

A record holds a workload key and a config, not the layer it came from, so each
foreign workload is rebuilt from its key (:func:`task_from_key`): ``REBUILDERS``
maps a key's head (the text before ``(``) to ``rebuild(key, target) -> Task |
None``; the entry ``"vta_conv2d"`` rebuilds an accelerator conv from its preset,
shapes, strides, padding and vector count, and every other head is a CPU
implementation of the strategy registry (:func:`rebuild_llvm`: the master op
alone, on inputs and random constants of the key's shapes, optimized and fused
as a model is; accepted only if the rebuilt task's key is the record's key).
The rebuilt task's loop-IR features (``features.py``) are statistics that mean
the same for any shape, and the cost model normalises costs per workload, so
what the records teach (which tilings, vector widths, parallel depths win)
carries over to shapes no log covers (AutoTVM's transfer learning:
``XGBTuner.load_history``).

Records of a task's own workload tuned for another target (another CPU, of any ISA
class, or a CPU feature set) are *warm starts* (:func:`warm_starts`): the best point of each
such target is measured early in the task's search, here, so a shipped or foreign log
speeds the search up without its costs being taken for this machine's.

Featurizing a CPU record builds its loop nest (hundredths of a second), so
:func:`samples` keeps at most ``limit`` records, spread over the workloads and over
each workload's cost range (its best, its worst and evenly between). A key that
does not rebuild, or a config that is not a point of the rebuilt space, is
skipped: transfer only ever adds guidance.
"""
from __future__ import annotations

import ast
import json
import math
import re

import numpy as np

from compiler.graph_lower.space import Config

from .features import featurize
from .isa_class import exact_key, isa_class
from .task import Task

#: records featurized for transfer at most (a CPU record costs hundredths of a second)
LIMIT = 256

#: warm-start points per task at most (one per other target, the task's ISA class first)
WARM_STARTS = 4

_LLVM_KEY = re.compile(r"^(\w+)\((.*)->([\dx]*);(\w+);(.*)\)$")
_VTA_KEY = re.compile(r"^vta_conv2d\(([^;]+);([\dx]+);([\dx]+);s(\d+)x(\d+);p(\d+)x(\d+);v([12])\)$")


def _shape(text: str) -> tuple:
    return tuple(int(d) for d in text.split("x")) if text else ()


def rebuild_llvm(key: str, target: dict) -> "Task | None":
    """The CPU task of workload ``key`` on ``target`` (a log's target record), or None
    if the key does not parse or rebuilds to another key."""
    from compiler.graph import Graph, input_node, make, optimize, param_node
    from compiler.graph_lower.strategy import default_registry

    from .task import llvm_tasks
    m = _LLVM_KEY.match(key)
    if m is None:
        return None
    head, ins, _, dtype, attrs = m.groups()
    ops = [op for op, impls in default_registry().impls.items()
           if any(i.name == head for i in impls)]
    try:
        call = ast.parse(f"f({attrs})", mode="eval").body
        kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    except (SyntaxError, ValueError):
        return None
    if len(ops) != 1:
        return None
    rng = np.random.default_rng(0)
    srcs, inputs, params = [], [], {}
    for i, text in enumerate(ins.split(",") if ins else []):
        const = text.endswith("c")
        shape = _shape(text.rstrip("c"))
        if const:
            params[f"w{i}"] = (rng.standard_normal(shape) * 0.1).astype(dtype)
            srcs.append(param_node(f"w{i}", params[f"w{i}"]))
        else:
            srcs.append(input_node(f"x{i}", shape, dtype))
            inputs.append(srcs[-1])
    try:
        out = make(ops[0], *srcs, **kwargs)
        graph = optimize(Graph(tuple(inputs), (out,), ("y",)), params).graph
        tasks = llvm_tasks(graph, target.get("target", "llvm"))
    except Exception:       # any failure to rebuild only means no transfer from this key
        return None
    return next((t for t in tasks if t.key == key), None)


def rebuild_vta_conv2d(key: str, target: dict) -> "Task | None":
    """The accelerator conv2d task of ``key`` (its preset named in the key), or None."""
    from vta_hw.config import load_config

    from .task import vta_conv2d_task
    m = _VTA_KEY.match(key)
    if m is None:
        return None
    name, data, kernel, sh, sw, ph, pw, vectors = m.groups()
    kernel = _shape(kernel)
    shift = 0 if vectors == "1" else (0,) * kernel[0]
    try:
        t = vta_conv2d_task(load_config(name), _shape(data), kernel, (int(sh), int(sw)),
                            (int(ph), int(pw)), shift=shift)
    except Exception:       # an unknown preset or a shape no tiling fits: no transfer
        return None
    return t if t.key == key else None


#: key head -> rebuild(key, target record) -> Task | None (other heads: rebuild_llvm)
REBUILDERS = {"vta_conv2d": rebuild_vta_conv2d}


def task_from_key(key: str, target: dict) -> "Task | None":
    """The task of a log's workload ``key`` and ``target`` record, or None if it does not
    rebuild (see the module docstring)."""
    return REBUILDERS.get(key.split("(", 1)[0], rebuild_llvm)(key, target)


def _config(task: Task, values: dict) -> "Config | None":
    names = [k.name for k in task.space.knobs]
    if sorted(values) != sorted(names):
        return None
    return Config(tuple((n, values[n]) for n in names))


def _spread(recs: list, n: int) -> list:
    """Up to ``n`` of ``recs`` evenly over their cost order (best and worst included)."""
    recs = sorted(recs, key=lambda r: r.cost)
    if len(recs) <= n:
        return recs
    return [recs[int(i)] for i in np.unique(np.linspace(0, len(recs) - 1, n).round())]


def samples(records, tasks, limit: int = LIMIT) -> list:
    """Transfer samples ``[(task, [(config, cost)])]`` from ``records`` of workloads other
    than ``tasks`` ' (same key and target: those a rerun resumes), for the task kinds
    among ``tasks``; at most ``limit`` records (module docstring)."""
    own = {(t.key, json.dumps(t.target, sort_keys=True)) for t in tasks}
    kinds = {t.kind for t in tasks}
    groups: dict = {}
    for r in records:
        k = (r.key, json.dumps(r.target, sort_keys=True))
        if k not in own:
            groups.setdefault(k, []).append(r)
    if not groups or limit < 1:
        return []
    quota = max(2, limit // len(groups))
    out, used = [], 0
    for (key, _), recs in groups.items():
        if used >= limit:
            break
        task = task_from_key(key, recs[0].target)
        if task is None or task.kind not in kinds:
            continue
        pts = []
        for r in _spread(recs, min(quota, limit - used)):
            cfg = _config(task, r.config_values())
            if cfg is None:
                continue
            try:
                featurize(task, cfg)
            except Exception:   # a config today's template no longer takes
                continue
            pts.append((cfg, r.cost if math.isfinite(r.cost) else math.inf))
        if len(pts) >= 2:
            out.append((task, pts))
            used += len(pts)
    return out


def warm_starts(records, task: Task, limit: int = WARM_STARTS) -> list:
    """The ``Config`` s of ``task``'s space to measure early (module docstring): for each
    target other than the task's own (``isa_class.exact_key``) that ``records`` hold its
    workload for, its lowest-cost point that is a point of today's space; those of the
    task's ISA class first, then by cost; distinct; at most ``limit``."""
    own, cls = exact_key(task.target), isa_class(task.target)
    best: dict = {}
    for r in records:
        k = exact_key(r.target)
        if r.key == task.key and k != own and math.isfinite(r.cost) and \
                (k not in best or r.cost < best[k].cost):
            best[k] = r
    out: list = []
    for r in sorted(best.values(), key=lambda r: (cls is None or isa_class(r.target) != cls,
                                                  r.cost)):
        try:
            cfg = task.space.point(**r.config_values())
        except ValueError:          # a knob or value today's space no longer has
            continue
        if cfg not in out:
            out.append(cfg)
    return out[:limit]
