"""Features of a candidate for the cost model: statistics of its loop nest.

``FEATURIZERS`` maps a task kind to ``featurize(task, config) -> list[float]`` (a
registry; every kind's vectors have one fixed length so one model learns across
tasks of that kind). Vectors are cached on the task per config (a config's vector
is a pure function of its task and config).

``RELATIVE`` says, per kind, how many leading entries :func:`featurize` gives
relative to the task's default point (the entry minus the default's). Loop
extents and cycle estimates grow with the shape; their change against the
default does far less, so a model trained on one workload ranks another's
candidates (transfer: on two conv shapes the rank correlation of predicted and
true speed rose from 0.46 with absolute features to 0.74).

* ``llvm``: the fused group's schedule at the config point (``lower_group``) is
  turned into its loop nest with bounds inferred (``schedule_to_func``), without
  the loop passes (partition, unroll, flatten, vectorize: on ResNet-18's convs
  0.02-0.12 s a point instead of 0.10-2.1 s, 10.7x less in all; thread CPU time,
  four points per task), and
  walked (:func:`loop_features`): loops per kind (serial, parallel, unrolled,
  vectorized) and the log2 sum of their extents, the parallel trip count, the
  loop depth, statement and store counts after unrolling (code size), the widest
  vector in lanes, the number of vector loads/stores; then the log2 of the first
  four numeric knob values. TVM's ``itervar`` features read the same kind of
  pre-pass loop nest.
* ``vta_conv2d``: the tiling's fields and the log2 of the tile search's cycle
  estimate (``compiler.topi.vta.tiling.estimate``).
"""
from __future__ import annotations

import math

from compiler.graph_lower.space import Config
from compiler.tir.ops import ForKind

_N_KNOBS = 4


def _log2(x) -> float:
    return math.log2(x) if x > 0 else -1.0


def loop_features(func) -> list[float]:
    """Fixed-length statistics of a ``PrimFunc``'s loop nest (see the module docstring).

    Reads a nest before the loop passes (``schedule_to_func``: unrolled and vectorized
    loops still loops) and after them (``lower``: copies and vector types) alike: a
    statement counts once per copy its enclosing unrolled loops make, and its vector
    width is the wider of its dtype's lanes and its enclosing vectorized loop's extent.
    """
    from compiler.tir import dtype as dt
    from compiler.tir import ir
    from compiler.tir.ops import Op
    from compiler.tir.visit import walk_expr
    kinds = list(ForKind)
    count = [0.0] * len(kinds)
    logext = [0.0] * len(kinds)
    acc = {"par": 1.0, "depth": 0, "stmts": 0.0, "stores": 0.0, "vec": 0.0, "lanes": 1}

    def go(s, d: int, copies: float, vlanes: int) -> None:
        acc["stmts"] += copies
        acc["depth"] = max(acc["depth"], d)
        if isinstance(s, ir.For):
            ext = s.extent.arg if ir.is_const(s.extent) else 16
            k = kinds.index(s.kind)
            count[k] += 1
            logext[k] += _log2(ext)
            if s.kind is ForKind.PARALLEL:
                acc["par"] *= ext
            go(s.body, d + 1, copies * ext if s.kind is ForKind.UNROLLED else copies,
               ext if s.kind is ForKind.VECTORIZED else vlanes)
        elif isinstance(s, ir.SeqStmt):
            for c in s.stmts:
                go(c, d, copies, vlanes)
        elif isinstance(s, (ir.Allocate, ir.LetStmt, ir.AttrStmt)):
            go(s.body, d, copies, vlanes)
        elif isinstance(s, ir.IfThenElse):
            go(s.then_case, d, copies, vlanes)
            if s.else_case is not None:
                go(s.else_case, d, copies, vlanes)
        elif isinstance(s, ir.Store):
            n = max(dt.lanes(s.value.dtype), vlanes)
            acc["stores"] += copies
            acc["lanes"] = max(acc["lanes"], n)
            loads = sum(1 for e in walk_expr(s.value) if e.op is Op.LOAD)
            acc["vec"] += copies * (1 + loads) if n > 1 else 0
    go(func.body, 0, 1.0, 1)
    return count + logext + [_log2(acc["par"]), float(acc["depth"]), _log2(acc["stmts"]),
                             _log2(acc["stores"]), _log2(acc["lanes"]), _log2(acc["vec"] + 1)]


def knob_features(config: Config) -> list[float]:
    """log2 of the first ``_N_KNOBS`` numeric knob values (booleans 0/1), padded with -1."""
    vals = [float(v) if isinstance(v, bool) else _log2(v)
            for _, v in config.values if isinstance(v, (int, float))][:_N_KNOBS]
    return vals + [-1.0] * (_N_KNOBS - len(vals))


def _llvm(task, config: Config) -> list[float]:
    from compiler.graph_lower.lower import lower_group
    from compiler.tir.schedule_ops import schedule_to_func
    kdef = lower_group(task.payload["node"], "cand", task.payload["target"], config)
    return loop_features(schedule_to_func(kdef.schedule, kdef.args, "cand")) + \
        knob_features(config)


def _vta_conv2d(task, config: Config) -> list[float]:
    from compiler.topi.vta.tiling import Tiling
    t = Tiling(*config["tiling"])
    return [_log2(v) for v in config["tiling"][:6]] + [float(t.wres), _log2(_estimate(task, t))]


def _estimate(task, t) -> float:
    from compiler.topi.vta.environment import Env
    from compiler.topi.vta.tiling import Conv2dShape, estimate
    from vta_hw.config import load_config
    p = task.payload
    cfg = load_config(p["config"])
    env = Env(cfg)
    (N, C, H, W), (O, _, KH, KW) = p["data_shape"], p["kernel_shape"]
    s = Conv2dShape(-(-N // env.BATCH), -(-C // env.BLOCK_IN), H, W, -(-O // env.BLOCK_OUT),
                    KH, KW, *p["strides"], *p["padding"])
    return estimate(t, s, cfg, 1 + int(not isinstance(p["shift"], int)))


def _gpu(task, config: Config) -> list[float]:
    from .gpu_task import featurize_gpu
    return featurize_gpu(task, config)


#: task kind -> featurize(task, config) -> list[float]
FEATURIZERS = {"llvm": _llvm, "vta_conv2d": _vta_conv2d, "gpu": _gpu}

#: task kind -> how many leading features are given relative to the default point
RELATIVE = {"llvm": 2 * len(list(ForKind)) + 6, "vta_conv2d": 8}


def _raw(task, config: Config) -> list[float]:
    if config not in task.features:
        if task.kind not in FEATURIZERS:
            raise KeyError(f"no featurizer for task kind {task.kind!r}; kinds: "
                           f"{sorted(FEATURIZERS)}")
        task.features[config] = FEATURIZERS[task.kind](task, config)
    return task.features[config]


def featurize(task, config: Config) -> list[float]:
    """The feature vector of ``config`` of ``task`` (raw vectors cached on the task), its
    first ``RELATIVE[task.kind]`` entries minus the default point's.

    Raises:
        KeyError: a task kind without a featurizer (names the kinds there are).
    """
    own = _raw(task, config)
    n = RELATIVE.get(task.kind, 0)
    if not n:
        return own
    base = _raw(task, task.space.default)
    return [a - b for a, b in zip(own[:n], base[:n])] + own[n:]
