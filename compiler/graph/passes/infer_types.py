"""Type and shape inference: rebuild every node through its op's inference.

Nodes built with `make` already carry types; this pass re-derives them from
the inputs (catching graphs assembled by hand or edited) and raises
GraphError naming the first node whose inputs or attributes are invalid.
"""

from __future__ import annotations

from ..ir import Graph, Node, make
from ..ops import LEAVES


def infer_types(graph: Graph, params: dict) -> tuple[Graph, dict]:
    memo: dict[Node, Node] = {}
    for n in graph.nodes():
        memo[n] = n if n.op in LEAVES else make(n.op, *(memo[s] for s in n.src), label=n.label, **n.attr_dict)
    return Graph(graph.inputs, tuple(memo[o] for o in graph.outputs), graph.output_names), dict(params)
