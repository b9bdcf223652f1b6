"""Tuning tasks: one per distinct workload of a model, each with its config space.

A :class:`Task` is what the tuner searches and a runner measures:

* kind ``"llvm"``: the master op (conv, dense, matmul, pooling) of a fused CPU
  group. Its workload key names the implementation, the master's input and
  output shapes, dtype, attributes and which inputs are constants, so equal
  layers of a model (and of different models) share one task and one log
  entry. The runner builds the whole fused group (``payload["node"]``) at a
  config point and times it.
* kind ``"vta_conv2d"``: an accelerator conv2d or dense (as a 1x1 conv); its
  space is the tilings that fit the preset's buffers (tile sizes and virtual
  threads, ``compiler.topi.vta.tiling``); the runner counts its cycles on the
  cycle model.

``extract.py``'s ``extract_tasks`` finds a model's tasks, deduplicated by workload key;
``weight`` counts the calls of the workload in the model (the task scheduler
multiplies a task's cost by it).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from compiler.codegen.llvm.target import Target, parse_target
from compiler.graph import Graph, Node, Op
from compiler.graph_lower.space import ConfigSpace, Knob
from compiler.graph_lower.strategy import Workload, default_registry

from .record import target_record


@dataclass
class Task:
    """One workload to tune.

    Attributes:
        key: the workload key (a stable string; the tuning log's join key).
        kind: ``"llvm"`` or ``"vta_conv2d"`` (which runner measure function applies).
        space: the config space; its default point is the untuned schedule.
        payload: what the runner builds from (picklable): ``{"node", "target"}`` for
            llvm, the conv2d arguments and preset for vta_conv2d.
        target: the target record (``record.target_record``) results are logged under.
        weight: how many times the model calls this workload.
        name: a short readable name (a layer label).
    """

    key: str
    kind: str
    space: ConfigSpace
    payload: dict
    target: dict
    weight: int = 1
    name: str = ""
    features: dict = field(default_factory=dict, repr=False)   # config -> feature vector cache


def master_of(node: Node, target: Target):
    """The master (impl, workload) of FUSED ``node`` on ``target``, or None (injective)."""
    body: Graph = node.attr("body")
    consts = tuple(inp for inp, s in zip(body.inputs, node.src) if s.op is Op.PARAM)
    registry = default_registry()
    inputs = set(body.inputs)
    for n in body.nodes():
        if n in inputs:
            continue
        w = Workload(n, target, consts)
        impl = registry.select(w)
        if impl.kind is not None:
            return impl, w
    return None


def workload_key(impl, w: Workload) -> str:
    """``impl(shapes; dtype; attrs; const mask)``: equal for equal master ops."""
    n = w.node
    ins = ",".join("x".join(map(str, s.shape)) + ("c" if w.is_const(s) else "") for s in n.src)
    attrs = ",".join(f"{k}={v!r}" for k, v in n.attrs if k != "body")
    return f"{impl.name}({ins}->{'x'.join(map(str, n.shape))};{n.dtype};{attrs})"


def llvm_tasks(graph: Graph, target="llvm") -> list[Task]:
    """Tasks of an optimized (fused) graph's masters whose space has more than one point."""
    tgt = parse_target(target)
    rec = target_record(tgt)
    tasks: dict[str, Task] = {}
    for n in graph.nodes():
        if n.op is not Op.FUSED:
            continue
        m = master_of(n, tgt)
        if m is None:
            continue
        impl, w = m
        space = impl.space(w)
        if space.size <= 1:
            continue
        key = workload_key(impl, w)
        if key in tasks:
            tasks[key].weight += 1
            continue
        tasks[key] = Task(key, "llvm", space, {"node": n, "target": str(tgt)}, rec, 1,
                          w.node.label or n.attr("name"))
    return list(tasks.values())


def _pair(v) -> tuple:
    return (v, v) if isinstance(v, int) else tuple(v)


def vta_conv2d_key(cfg, data_shape, kernel_shape, strides, padding, shift) -> str:
    """The workload key of an accelerator conv2d (``shift`` an int or one per channel)."""
    (sh, sw), (ph, pw) = _pair(strides), _pair(padding)
    vectors = 1 + int(not isinstance(shift, int))
    return (f"vta_conv2d({cfg.name};{'x'.join(map(str, data_shape))};"
            f"{'x'.join(map(str, kernel_shape))};s{sh}x{sw};p{ph}x{pw};v{vectors})")


def vta_target(cfg) -> dict:
    """The log's ``target`` entry of accelerator records on preset ``cfg``."""
    return {"target": "vta", "config": cfg.name}


def vta_conv2d_task(cfg, data_shape, kernel_shape, strides=(1, 1), padding=(0, 0), *,
                    shift=0, relu=False, name="", top: int = 64) -> Task:
    """The task of one accelerator conv2d (int8 NCHW data, OIHW weights; ``shift`` an int or
    one per output channel). Its one knob ``tiling`` lists the ``top`` best-estimated
    tilings with two virtual threads and with one, as ``(th, tw, toc, tic, tkh, vt, wres)``;
    the default is the tile search's pick (today's choice).

    Raises:
        compiler.topi.vta.tiling.TilingError: no tiling fits the preset.
    """
    from compiler.topi.vta.environment import Env
    from compiler.topi.vta.tiling import Conv2dShape, candidates, search
    env = Env(cfg)
    N, C, H, W = data_shape
    O, _, KH, KW = kernel_shape
    (sh, sw), (ph, pw) = _pair(strides), _pair(padding)
    s = Conv2dShape(-(-N // env.BATCH), -(-C // env.BLOCK_IN), H, W, -(-O // env.BLOCK_OUT),
                    KH, KW, sh, sw, ph, pw)
    per_channel = not isinstance(shift, int)
    vectors = 1 + int(per_channel)
    def as_tuple(t):
        return (t.th, t.tw, t.toc, t.tic, t.tkh, t.vt, t.wres)
    default = as_tuple(search(s, cfg, vectors, 2))
    cands = [as_tuple(t) for vt in (2, 1) for t in candidates(s, cfg, vectors, vt, top=top)]
    cands = tuple(dict.fromkeys([default] + cands))
    key = vta_conv2d_key(cfg, data_shape, kernel_shape, strides, padding, shift)
    payload = {"config": cfg.name, "data_shape": tuple(data_shape),
               "kernel_shape": tuple(kernel_shape), "strides": (sh, sw), "padding": (ph, pw),
               "shift": shift, "relu": relu}
    return Task(key, "vta_conv2d", ConfigSpace((Knob("tiling", cands, default),)), payload,
                vta_target(cfg), 1, name)


def vta_tasks(graph: Graph, params: dict, cfg, calib=None, min_channels=None) -> list[Task]:
    """Tasks of the accelerator conv2d/dense nodes of a float ``graph`` quantized and
    partitioned as ``build_model(..., target="vta")`` does (``calib`` None: 8 seeded
    normal samples, as there)."""
    import numpy as np

    from compiler.quant import QOp, partition, quantize
    if calib is None:
        rng = np.random.default_rng(0)
        calib = {i.name: rng.standard_normal((8,) + tuple(i.shape[1:])).astype(np.float32)
                 for i in graph.inputs}
    qg = partition(quantize(graph, params, calib), cfg, min_channels=min_channels)
    tasks: dict[str, Task] = {}
    for n in qg.nodes:
        if n.target != "vta" or n.op not in (QOp.CONV2D, QOp.DENSE):
            continue
        x, w = qg.nodes[n.src[0]].shape, qg.params[n.params[0]].shape
        a = n.attrs
        if n.op is QOp.CONV2D:
            t = vta_conv2d_task(cfg, x, w, a["strides"], a["padding"], shift=a["shift"],
                                relu=a["relu"], name=n.name)
        else:
            t = vta_conv2d_task(cfg, (1, x[1], 1, x[0]), tuple(w) + (1, 1), shift=a["shift"],
                                relu=a["relu"], name=n.name)
        if t.key in tasks:
            tasks[t.key].weight += 1
        else:
            tasks[t.key] = t
    return list(tasks.values())
