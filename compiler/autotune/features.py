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
  walked (``loop_features.py``): loops per kind (serial, parallel, unrolled,
  vectorized) and the log2 sum of their extents, the parallel trip count, the
  loop depth, statement and store counts after unrolling (code size), the widest
  vector in lanes, the number of vector loads/stores; then the log2 of the first
  four numeric knob values. TVM's ``itervar`` features read the same kind of
  pre-pass loop nest.
* ``vta_conv2d``: the tiling's fields and the log2 of the tile search's cycle
  estimate (``compiler.topi.vta.tiling.estimate``).
"""
from __future__ import annotations


from compiler.graph_lower.space import Config
from compiler.tir.ops import ForKind

from .loop_features import _log2, loop_features

_N_KNOBS = 4


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
