"""The layout stage of ``vta tune`` (CPU): measure every conv in every candidate layout and
every layout transform a choice could need, then let the graph tuner choose.

1. :func:`plan_layout_stage`: the model's layout sites (``compiler.graph.passes.
   assign_layout``: each conv's ``(in block, out block)`` candidates and the edges where
   layouts meet); the tuning tasks of the convs in each candidate layout (workload keys
   name the layout through the shapes, so each layout has its own records); and one task
   of kind ``"layout_transform"`` per (tensor shape, from layout, to layout) some choice
   implies, whose one point the runner builds and times. Both kinds of result are
   ordinary trial records: a rerun finds them in the log and measures nothing twice.
2. :func:`decide`: per site and candidate, the best record's cost of that workload; per
   edge, the transform's cost; the dynamic program (``graph_tuner.solve``) picks the
   choice of least total estimated time. The decision is a ``graph_layout`` record
   (``record.LayoutRecord``) whose ``estimate`` gives, in seconds, the DP's total
   (``dp_s``), the total of each conv's fastest layout alone with the transforms that
   implies (``per_layer_best_s``, its choice ``per_layer_best``), and today's, every conv
   NCHW (``default_s``); ``transforms`` counts the moves the DP's choice implies.

A transform shared by several consumers (one tensor moved once) is counted per edge in
the estimate, as AutoTVM does; the build inserts it once.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass

from compiler.codegen.llvm.target import parse_target
from compiler.graph import Node, Op, input_node, make
from compiler.graph.passes.assign_layout import (NCHW, LayoutSites, kernel_layout, layout_of,
                                                 layout_sites)
from compiler.graph_lower.space import ConfigSpace
from compiler.graph_lower.strategy import Workload, default_registry
from vta_hw.errors import ArgumentError

from .graph_tuner import solve, total_cost
from .record import LayoutRecord, best_records, target_record
from .task import Task, llvm_tasks, workload_key


@dataclass
class LayoutStage:
    """What the layout stage measures for one model (module docstring).

    Attributes:
        sites: the graph's layout sites and edges.
        site_keys: per site, per candidate, the conv's workload key in that layout.
        tasks: the conv tasks over all candidate layouts (deduplicated by key).
        transforms: one ``"layout_transform"`` task per (shape, from, to) a choice implies.
        target: the target record results are looked up under.
    """

    sites: LayoutSites
    site_keys: list
    tasks: list
    transforms: list
    target: dict


def transform_key(shape, src: str, dst: str, dtype: str = "float32") -> str:
    """The workload key of moving an NCHW-``shape`` tensor from layout ``src`` to ``dst``."""
    return f"layout_transform({'x'.join(map(str, shape))};{src}->{dst};{dtype})"


def transform_task(shape, src: str, dst: str, target, dtype: str = "float32") -> Task:
    """The task of one layout transform (no knobs: its one point is built and timed)."""
    tgt = parse_target(target)
    key = transform_key(shape, src, dst, dtype)
    return Task(key, "layout_transform", ConfigSpace(),
                {"shape": tuple(shape), "src": src, "dst": dst, "dtype": dtype,
                 "target": str(tgt)}, target_record(tgt), 1, key)


def _site_key(conv: Node, cand: tuple, tgt) -> str:
    """The workload key of site conv ``conv`` laid out as ``cand`` (as the fused group of
    the built graph will have it)."""
    ib, ob = cand
    x, w = conv.src
    attrs = conv.attr_dict
    if ob:
        klayout = kernel_layout(conv, ib, ob)
        xs = make(Op.LAYOUT_TRANSFORM, x, src_layout=NCHW, dst_layout=layout_of(ib)).shape \
            if ib else x.shape
        ws = make(Op.LAYOUT_TRANSFORM, w, src_layout="OIHW", dst_layout=klayout).shape
        attrs.update(data_layout=layout_of(ib), kernel_layout=klayout)
    else:
        xs, ws = x.shape, w.shape
    wn = Node(Op.PARAM, shape=ws, dtype=w.dtype, name="w")
    n = make(Op.CONV2D, input_node("x", xs, x.dtype), wn, **attrs)
    wl = Workload(n, tgt, (wn,))
    return workload_key(default_registry().select(wl), wl)


def _outs(ls: LayoutSites, i: int) -> list:
    return [NCHW] if i < 0 else [layout_of(ob) for _, ob in ls.sites[i].candidates]


def _wants(ls: LayoutSites, e) -> list:
    if e.dst < 0:
        return [NCHW]
    return [layout_of(c[0] if e.port == "in" else c[1]) for c in ls.sites[e.dst].candidates]


def plan_layout_stage(model, target: str = "llvm", input_shapes=None) -> LayoutStage:
    """The layout stage of ``model`` (anything ``build_model`` takes) on LLVM ``target``.

    Raises:
        compiler.frontend.FrontendError: the model does not import.
    """
    from compiler.frontend import import_model
    from compiler.graph import optimize
    tgt = parse_target(target)
    graph, params = import_model(model, input_shapes=input_shapes)
    ls = layout_sites(optimize(graph, params, fuse=False).graph)
    tasks: dict = {}
    widest = max((len(s.candidates) for s in ls.sites), default=0)
    for k in range(widest):              # the k-th candidate of every site, once each
        choice = [s.candidates[min(k, len(s.candidates) - 1)] for s in ls.sites]
        fused = optimize(graph, params, layouts=lambda _, c=choice: c).graph
        for t in llvm_tasks(fused, target):
            tasks.setdefault(t.key, t)
    keys = [[_site_key(s.node, c, tgt) for c in s.candidates] for s in ls.sites]
    moves = {}
    for e in ls.edges:
        for have in _outs(ls, e.src):
            for want in _wants(ls, e):
                if have != want:
                    t = transform_task(e.tensor.shape, have, want, target, e.tensor.dtype)
                    moves.setdefault(t.key, t)
    return LayoutStage(ls, keys, list(tasks.values()), list(moves.values()), target_record(tgt))


def decide(stage: LayoutStage, records, max_states: int = 100_000) -> LayoutRecord:
    """The graph tuner's decision from the trial ``records`` (module docstring); a conv
    layout or transform without a successful record costs ``inf`` (never chosen).

    Raises:
        vta_hw.errors.ArgumentError: no choice has a finite cost.
    """
    tj = json.dumps(stage.target, sort_keys=True)
    best = best_records(records)

    def cost(key):
        r = best.get((key, tj))
        return r.cost if r is not None else math.inf

    ls = stage.sites
    node_costs = [[cost(k) for k in keys] for keys in stage.site_keys]
    move = {}

    def t(e, have, want):
        if have == want:
            return 0.0
        k = transform_key(e.tensor.shape, have, want, e.tensor.dtype)
        return move.setdefault(k, cost(k))

    edges = []
    for e in ls.edges:
        outs, wants = _outs(ls, e.src), _wants(ls, e)
        if e.src < 0:                     # from NCHW: a cost of the consumer's candidates
            for c, want in enumerate(wants):
                node_costs[e.dst][c] += t(e, NCHW, want)
        elif e.dst < 0:                   # to NCHW: a cost of the producer's candidates
            for c, have in enumerate(outs):
                node_costs[e.src][c] += t(e, have, NCHW)
        else:
            edges.append((e.src, e.dst, [[t(e, h, w) for w in wants] for h in outs]))
    sol = solve(node_costs, edges, max_states)
    alone = [[cost(k) for k in keys] for keys in stage.site_keys]
    per_layer = [min(range(len(c)), key=c.__getitem__) for c in alone]
    choice = [ls.sites[i].candidates[c] for i, c in enumerate(sol.choice)]
    # every total summed the same way, so equal choices give equal figures
    estimate = {"dp_s": total_cost(node_costs, edges, sol.choice), "exact": sol.exact,
                "per_layer_best_s": total_cost(node_costs, edges, per_layer),
                "per_layer_best": [list(ls.sites[i].candidates[c])
                                   for i, c in enumerate(per_layer)],
                "default_s": total_cost(node_costs, edges, [0] * len(ls.sites)),
                "transforms": len(ls.transforms(choice))}
    return LayoutRecord(ls.key, stage.target, choice, estimate)


def tune_layouts(model, runner, log, *, target: str = "llvm", trials: int = 16,
                 input_shapes=None, **tune_options) -> "tuple[LayoutStage, LayoutRecord | None]":
    """Run the layout stage: tune the convs' blocked layouts (``trials`` each; records
    already in ``log`` count), time the transforms, decide, append the decision to ``log``
    (a ``record.TuningLog``). ``tune_options`` go to ``tuner.tune`` (strategy,
    time_budget_s, on_trial...). The decision is None (nothing appended) where some conv
    has no measured layout at all (a time budget spent before it)."""
    from .tuner import tune
    stage = plan_layout_stage(model, target, input_shapes)
    tune(stage.tasks, runner, trials=trials, log=log, **tune_options)
    # one point each, nothing to search or learn: every transform is timed once
    tune(stage.transforms, runner, trials=1, log=log, strategy="random")
    try:
        rec = decide(stage, log.records())
    except ArgumentError:          # a conv never measured (a time budget spent before it)
        return stage, None
    log.append(rec)
    return stage, rec
