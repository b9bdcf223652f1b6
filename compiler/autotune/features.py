"""Features of a candidate for the cost model: statistics of its lowered loop IR.

``FEATURIZERS`` maps a task kind to ``featurize(task, config) -> list[float]`` (a
registry; every kind's vectors have one fixed length so one model learns across
tasks of that kind). Vectors are cached on the task per config.

``RELATIVE`` says, per kind, how many leading entries :func:`featurize` gives
relative to the task's default point (the entry minus the default's). Loop
extents and cycle estimates grow with the shape; their change against the
default does far less, so a model trained on one workload ranks another's
candidates (transfer: on two conv shapes the rank correlation of predicted and
true speed rose from 0.46 with absolute features to 0.74).

* ``llvm``: the fused group is lowered at the config point (``lower_group`` then
  ``compiler.tir.lower``) and the final loop IR is walked (:func:`loop_features`):
  loops per kind (serial, parallel, unrolled, vectorized) and the log2 sum of
  their extents, the parallel trip count, the loop depth, statement and store
  counts (code size after unrolling), the widest vector in lanes, the number of
  vector loads/stores; then the log2 of the first four numeric knob values.
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
    """Fixed-length statistics of a lowered ``PrimFunc`` (see the module docstring)."""
    from compiler.tir import dtype as dt
    from compiler.tir import ir
    from compiler.tir.ops import ForKind, Op
    from compiler.tir.visit import walk_expr, walk_stmt
    kinds = list(ForKind)
    count = [0.0] * len(kinds)
    logext = [0.0] * len(kinds)
    par_trip, stmts, stores, vec_ops, lanes = 1.0, 0, 0, 0, 1

    def depth(s, d=0):
        if isinstance(s, ir.For):
            return depth(s.body, d + 1)
        if isinstance(s, ir.SeqStmt):
            return max((depth(c, d) for c in s.stmts), default=d)
        if isinstance(s, (ir.Allocate, ir.LetStmt, ir.AttrStmt)):
            return depth(s.body, d)
        if isinstance(s, ir.IfThenElse):
            return max(depth(s.then_case, d), depth(s.else_case, d) if s.else_case else d)
        return d

    for s in walk_stmt(func.body):
        stmts += 1
        if isinstance(s, ir.For):
            k = kinds.index(s.kind)
            ext = s.extent.arg if ir.is_const(s.extent) else 16
            count[k] += 1
            logext[k] += _log2(ext)
            if s.kind is ForKind.PARALLEL:
                par_trip *= ext
        elif isinstance(s, ir.Store):
            stores += 1
            n = dt.lanes(s.value.dtype)
            lanes = max(lanes, n)
            vec_ops += n > 1
            vec_ops += sum(1 for e in walk_expr(s.value) if e.op is Op.LOAD
                           and dt.lanes(e.dtype) > 1)
    return count + logext + [_log2(par_trip), depth(func.body), _log2(stmts), _log2(stores),
                             _log2(lanes), _log2(vec_ops + 1)]


def knob_features(config: Config) -> list[float]:
    """log2 of the first ``_N_KNOBS`` numeric knob values (booleans 0/1), padded with -1."""
    vals = [float(v) if isinstance(v, bool) else _log2(v)
            for _, v in config.values if isinstance(v, (int, float))][:_N_KNOBS]
    return vals + [-1.0] * (_N_KNOBS - len(vals))


def _llvm(task, config: Config) -> list[float]:
    from compiler.graph_lower.lower import lower_group
    from compiler.tir import lower
    kdef = lower_group(task.payload["node"], "cand", task.payload["target"], config)
    return loop_features(lower(kdef.schedule, kdef.args, "cand")) + knob_features(config)


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
