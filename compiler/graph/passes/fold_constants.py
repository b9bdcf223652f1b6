"""Constant folding: a node whose inputs are all PARAMs becomes a new PARAM holding its value.

Evaluated with the numpy reference (`compiler.graph.reference`), bottom-up,
so whole constant subgraphs collapse. FUSED nodes are left alone.
"""

from __future__ import annotations

from ..ir import Graph, Node, param_node
from ..ops import LEAVES, Op
from ..reference import evaluate
from ..rewrite import map_nodes
from .names import fresh_name


def fold_constants(graph: Graph, params: dict) -> tuple[Graph, dict]:
    out = dict(params)

    def fold(n: Node) -> Node:
        if n.op in LEAVES or n.op is Op.FUSED or not n.src or any(s.op is not Op.PARAM for s in n.src):
            return n
        name = fresh_name(out, f"{n.label or n.op.name.lower()}_folded")
        out[name] = evaluate(n, out)
        return param_node(name, out[name])

    return map_nodes(graph, fold), out
