"""The graph optimization pipeline: a flat, ordered, named list of passes.

    infer_types -> fold_constants -> fold_batch_norm -> eliminate_dead_code
    [-> alter_layout(block) | assign_layout(choose) -> fold_constants -> eliminate_dead_code]
    -> fuse_ops                      then: plan_memory (analysis)

`optimize` runs it, verifying the IR after every pass when `verify` is set.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable, Mapping, NamedTuple

import numpy as np

from .ir import Graph
from .passes import (MemoryPlan, alter_layout, assign_layout, eliminate_dead_code, fold_batch_norm, fold_constants,
                     fuse_ops, infer_types, plan_memory)
from .verify import verify as verify_graph


class Pass(NamedTuple):
    name: str
    run: Callable[[Graph, dict], tuple[Graph, dict]]


def default_pipeline(layout_block: int | None = None, fuse: bool = True,
                     layouts: Callable | None = None) -> list[Pass]:
    """The passes `optimize` runs, in order. layout_block: NCHW{b}c block for convs (None: keep NCHW).
    layouts: instead, a per-conv choice `choose(LayoutSites) -> [(in block, out block)] | None`
    (`passes.assign_layout`, the graph tuner's decision)."""
    passes = [
        Pass("infer_types", infer_types),
        Pass("fold_constants", fold_constants),
        Pass("fold_batch_norm", fold_batch_norm),
        Pass("eliminate_dead_code", eliminate_dead_code),
    ]
    if layout_block and layouts is not None:
        raise ValueError(f"give layout_block ({layout_block}) or per-conv layouts, not both")
    if layout_block or layouts is not None:
        passes += [
            Pass(f"alter_layout[{layout_block}]", partial(alter_layout, block=layout_block)) if layout_block
            else Pass("assign_layout", partial(assign_layout, choose=layouts)),
            Pass("fold_constants", fold_constants),
            Pass("eliminate_dead_code", eliminate_dead_code),
        ]
    if fuse:
        passes.append(Pass("fuse_ops", fuse_ops))
    return passes


@dataclass(frozen=True)
class Optimized:
    """Result of `optimize`: the fused graph, its params, and the memory plan."""

    graph: Graph
    params: dict[str, np.ndarray]
    memory_plan: MemoryPlan
    passes: tuple[str, ...]


def optimize(graph: Graph, params: Mapping[str, np.ndarray], *, layout_block: int | None = None,
             fuse: bool = True, verify: bool = True, layouts: Callable | None = None,
             on_pass: Callable[[str, Graph, dict], None] | None = None) -> Optimized:
    """Run `default_pipeline(layout_block, fuse, layouts)` then `plan_memory`.

    on_pass(name, graph, params) is called after each pass (tests use it to
    check that every pass preserves outputs). Raises GraphError when a pass
    produces IR that fails `verify`.
    """
    params = dict(params)
    pipeline = default_pipeline(layout_block, fuse, layouts)
    for p in pipeline:
        graph, params = p.run(graph, params)
        if verify:
            verify_graph(graph, params)
        if on_pass is not None:
            on_pass(p.name, graph, params)
    return Optimized(graph, params, plan_memory(graph), tuple(p.name for p in pipeline))
