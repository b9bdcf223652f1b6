"""Dead-code elimination.

Removes no-op nodes (RESHAPE to the same shape, identity TRANSPOSE, CAST to
the same dtype, full SLICE, LAYOUT_TRANSFORM between equal layouts, a
LAYOUT_TRANSFORM undoing the one before it), collapses RESHAPE chains, and
drops params no node reads. (Unreachable nodes never exist: a graph is what
its outputs reach.)
"""

from __future__ import annotations

from ..ir import Graph, Node, make
from ..ops import Op
from ..rewrite import rewrite


def _reshape(n: Node):
    x = n.src[0]
    if n.shape == x.shape:
        return x
    if x.op is Op.RESHAPE:
        return make(Op.RESHAPE, x.src[0], label=n.label, newshape=n.shape)
    return None


def _transpose(n: Node):
    return n.src[0] if tuple(n.attr("perm")) == tuple(range(len(n.shape))) else None


def _cast(n: Node):
    return n.src[0] if n.dtype == n.src[0].dtype else None


def _slice(n: Node):
    x = n.src[0]
    full = all(b == 0 and e == d and s == 1 for b, e, s, d in zip(n.attr("begin"), n.attr("end"), n.attr("step"), x.shape))
    return x if full else None


def _layout(n: Node):
    src, dst = n.attr("src_layout"), n.attr("dst_layout")
    if src == dst:
        return n.src[0]
    x = n.src[0]
    if x.op is Op.LAYOUT_TRANSFORM and x.attr("src_layout") == dst and x.attr("dst_layout") == src:
        return x.src[0]
    return None


RULES = {Op.RESHAPE: [_reshape], Op.TRANSPOSE: [_transpose], Op.CAST: [_cast], Op.SLICE: [_slice],
         Op.LAYOUT_TRANSFORM: [_layout]}


def eliminate_dead_code(graph: Graph, params: dict) -> tuple[Graph, dict]:
    g = rewrite(graph, RULES)
    used = g.params_used()
    return g, {k: v for k, v in params.items() if k in used}
