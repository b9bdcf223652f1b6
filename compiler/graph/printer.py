"""Text form of a graph, one node per line, for debugging and test failure messages.

    %0 = input x: float32[1, 3, 8, 8]
    %1 = param w: float32[4, 3, 3, 3]
    %2 = conv2d(%0, %1) pads=(1, 1, 1, 1) -> float32[1, 4, 8, 8]
    return %2

FUSED nodes print their body indented under them.
"""

from __future__ import annotations

from .ir import Graph
from .ops import Op


def format_graph(graph: Graph, indent: str = "") -> str:
    ids = {}
    lines = []
    for n in graph.nodes():
        ids[n] = f"%{len(ids)}"
        ty = f"{n.dtype}{list(n.shape)}"
        if n.op in (Op.INPUT, Op.PARAM):
            lines.append(f"{indent}{ids[n]} = {n.op.name.lower()} {n.name}: {ty}")
            continue
        args = ", ".join(ids[s] for s in n.src)
        attrs = " ".join(f"{k}={v!r}" for k, v in n.attrs if k != "body")
        lines.append(f"{indent}{ids[n]} = {n.op.name.lower()}({args}){' ' + attrs if attrs else ''} -> {ty}")
        if n.op is Op.FUSED:
            lines.append(format_graph(n.attr("body"), indent + "    "))
    lines.append(f"{indent}return {', '.join(ids[o] for o in graph.outputs)}")
    return "\n".join(lines)
