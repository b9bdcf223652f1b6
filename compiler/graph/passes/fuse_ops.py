"""Operator fusion by pattern kind (TVM FuseOps rules, greedy over the DAG).

A producer P merges into the group of its consumer C when P has exactly one
consumer, is not a graph output, and:
- P is INJECTIVE and C is INJECTIVE or REDUCTION (injective chains fuse;
  reductions take injective inputs), or
- P is OUT_EWISE_FUSABLE (conv, dense, pool) and C is INJECTIVE (a complex
  op absorbs the elementwise/injective ops after it);
and the merged group holds at most one REDUCTION / OUT_EWISE_FUSABLE op (its
master). A LAYOUT_TRANSFORM is never absorbed after an OUT_EWISE_FUSABLE master:
it is a kernel of its own (as in TVM, where a conv takes only elementwise ops
after it), so the master keeps its aligned epilogue (``graph_lower.schedule``)
and the graph tuner's measured layer and transform costs add up to the build's. OPAQUE ops stay alone. Single consumers mean a group has exactly
one output (its root), so groups never form cycles.

Every compute node ends up in a FUSED node (singletons too): src = the
group's external inputs (activations, INPUTs and PARAMs), attrs body = a
`Graph` over INPUT placeholders "p0", "p1", ... with the group's ops,
name = "fused_" + op names, and pattern = the name of the group's highest
`Kind` (its master's: "OUT_EWISE_FUSABLE", "REDUCTION", "INJECTIVE" or
"OPAQUE"), which tells the lowering stage which schedule template to use. The lowering stage turns each FUSED node into
one kernel.
"""

from __future__ import annotations

from ..ir import Graph, Node, input_node, make
from ..ops import LEAVES, Kind, Op
from ..registry import kind_of


def fusion_groups(graph: Graph) -> dict[Node, list[Node]]:
    """Map group root -> member nodes in topological order (leaves excluded)."""
    users = graph.consumers()
    outputs = set(graph.outputs)
    order = [n for n in graph.nodes() if n.op not in LEAVES]
    parent = {n: n for n in order}
    master = {n: n if kind_of(n.op) in (Kind.REDUCTION, Kind.OUT_EWISE_FUSABLE) else None for n in order}

    def find(n: Node) -> Node:
        while parent[n] is not n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for n in order:
        us = users.get(n, [])
        if n in outputs or len(us) != 1:
            continue
        c = us[0]
        kn, kc = kind_of(n.op), kind_of(c.op)
        ok = (kn is Kind.INJECTIVE and kc in (Kind.INJECTIVE, Kind.REDUCTION)) or (
            kn is Kind.OUT_EWISE_FUSABLE and kc is Kind.INJECTIVE)
        gn, gc = find(n), find(c)
        if not ok or (master[gn] is not None and master[gc] is not None):
            continue
        if (c.op is Op.LAYOUT_TRANSFORM and master[gn] is not None
                and kind_of(master[gn].op) is Kind.OUT_EWISE_FUSABLE):
            continue
        parent[gn] = gc
        master[gc] = master[gc] or master[gn]
    groups: dict[Node, list[Node]] = {}
    for n in order:
        groups.setdefault(find(n), []).append(n)
    return groups


def _fused_name(members: list[Node]) -> str:
    name = "fused_" + "_".join(m.op.name.lower() for m in members)
    return name if len(name) <= 80 else name[:77] + "..."


def fuse_ops(graph: Graph, params: dict) -> tuple[Graph, dict]:
    groups = fusion_groups(graph)
    root_of = {m: r for r, ms in groups.items() for m in ms}
    outer: dict[Node, Node] = {}
    for n in graph.nodes():
        if n.op in LEAVES:
            outer[n] = n
        if n not in groups:
            continue
        members = groups[n]
        inside = set(members)
        ext: list[Node] = []
        for m in members:
            for s in m.src:
                if s not in inside and s not in ext:
                    if s.op not in LEAVES and root_of[s] is not s:
                        raise AssertionError(f"fusion produced a group reading a non-root member {s!r}")
                    ext.append(s)
        body_in = tuple(input_node(f"p{i}", s.shape, s.dtype) for i, s in enumerate(ext))
        local = dict(zip(ext, body_in))
        for m in members:
            local[m] = m.with_src(*(local[s] for s in m.src))
        body = Graph(body_in, (local[n],), ("",))
        pattern = max(kind_of(m.op) for m in members).name
        outer[n] = make(Op.FUSED, *(outer[s] for s in ext), label=n.label, body=body, name=_fused_name(members),
                        pattern=pattern)
    return Graph(graph.inputs, tuple(outer[o] for o in graph.outputs), graph.output_names), dict(params)
