"""One rewrite engine for graph passes: rules as data (op -> functions).

`rewrite(graph, rules)` rebuilds the graph bottom-up. Each node is first
rebuilt over its rewritten inputs, then the rules registered for its op are
tried in order; a rule returns a replacement `Node` or None. A replacement is
rewritten again (to a fixed point, at most `max_steps` per node).
"""

from __future__ import annotations

from typing import Callable, Mapping

from .ir import Graph, Node, toposort
from .ops import Op

Rule = Callable[[Node], "Node | None"]


def rewrite(graph: Graph, rules: Mapping[Op, list[Rule]], max_steps: int = 32) -> Graph:
    """Apply `rules` (op -> rule functions) bottom-up to a fixed point; returns the new graph."""
    memo: dict[Node, Node] = {}

    def visit(node: Node) -> Node:
        for n in toposort([node]):
            if n in memo:
                continue
            src = tuple(memo[s] for s in n.src)
            new = n if n.op in (Op.INPUT, Op.PARAM) or src == n.src else n.with_src(*src)
            for _ in range(max_steps):
                for rule in rules.get(new.op, ()):
                    out = rule(new)
                    if out is not None and out is not new:
                        new = visit(out) if out not in memo else memo[out]
                        break
                else:
                    break
            memo[n] = new
            memo.setdefault(new, new)
        return memo[node]

    outputs = tuple(visit(o) for o in graph.outputs)
    return Graph(graph.inputs, outputs, graph.output_names)


def map_nodes(graph: Graph, fn: Callable[[Node], Node]) -> Graph:
    """Rebuild bottom-up, replacing each (rebuilt) node by fn(node)."""
    memo: dict[Node, Node] = {}
    for n in graph.nodes():
        src = tuple(memo[s] for s in n.src)
        rebuilt = n if n.op in (Op.INPUT, Op.PARAM) or src == n.src else n.with_src(*src)
        memo[n] = fn(rebuilt)
    return Graph(graph.inputs, tuple(memo[o] for o in graph.outputs), graph.output_names)
