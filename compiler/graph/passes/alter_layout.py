"""Layout transformation to blocked NCHW{b}c for convolutions (TVM AlterOpLayout, simplified).

Every NCHW CONV2D with groups == 1 whose in- and out-channels divide by
`block` becomes
    LAYOUT_TRANSFORM(CONV2D(LT(x, NCHW->NCHW{b}c), LT(w, OIHW->OIHW{b}i{b}o),
                            data_layout=NCHW{b}c, kernel_layout=OIHW{b}i{b}o),
                     NCHW{b}c -> NCHW)
Then layout transforms are pushed down through elementwise ops (unary; binary
with both operands in the same blocked layout, or with a per-channel
constant [C,1,1] / [1,C,1,1] / scalar, which is re-laid out), and a transform
that undoes the one before it cancels. Weight transforms are constant: run
`fold_constants` after this pass.
"""

from __future__ import annotations

import numpy as np

from ..ir import Graph, Node, make
from ..ops import BINARY, UNARY, Op
from ..rewrite import rewrite


def _lt(x: Node, src: str, dst: str) -> Node:
    return make(Op.LAYOUT_TRANSFORM, x, src_layout=src, dst_layout=dst)


def _from_blocked(n: Node) -> str | None:
    """The blocked layout n converts back to NCHW from, if n is such a transform."""
    if n.op is Op.LAYOUT_TRANSFORM and n.attr("dst_layout") == "NCHW" and n.attr("src_layout") != "NCHW":
        return n.attr("src_layout")
    return None


def alter_layout(graph: Graph, params: dict, block: int = 16) -> tuple[Graph, dict]:
    """Rewrite convs to `NCHW{block}c`. ValueError if block is not a positive int."""
    if not isinstance(block, int) or block <= 0:
        raise ValueError(f"block must be a positive int, not {block!r}")
    layout, klayout = f"NCHW{block}c", f"OIHW{block}i{block}o"

    def conv(n: Node):
        if (n.attr("data_layout", "NCHW") != "NCHW" or n.attr("groups", 1) != 1
                or n.src[0].shape[1] % block or n.shape[1] % block):
            return None
        x, w = n.src
        attrs = dict(n.attr_dict, data_layout=layout, kernel_layout=klayout)
        blocked = make(Op.CONV2D, _lt(x, "NCHW", layout), _lt(w, "OIHW", klayout), label=n.label, **attrs)
        return _lt(blocked, layout, "NCHW")

    def unary(n: Node):
        lay = _from_blocked(n.src[0])
        if lay is None:
            return None
        return _lt(make(n.op, n.src[0].src[0], label=n.label, **n.attr_dict), lay, "NCHW")

    def per_channel(c: Node, lay: str, channels: int) -> Node | None:
        if c.op is not Op.PARAM:
            return None
        if int(np.prod(c.shape)) == 1 and len(c.shape) <= 1:
            return c
        if c.shape in ((channels, 1, 1), (1, channels, 1, 1)):
            return _lt(make(Op.RESHAPE, c, newshape=(1, channels, 1, 1)), "NCHW", lay)
        return None

    def binary(n: Node):
        a, b = n.src
        la, lb = _from_blocked(a), _from_blocked(b)
        if la and lb:
            if la != lb:
                return None
            return _lt(make(n.op, a.src[0], b.src[0], label=n.label, **n.attr_dict), la, "NCHW")
        lay = la or lb
        if lay is None or len(n.shape) != 4:
            return None
        blocked, other = (a, b) if la else (b, a)
        c = per_channel(other, lay, n.shape[1])
        if c is None:
            return None
        args = (blocked.src[0], c) if la else (c, blocked.src[0])
        return _lt(make(n.op, *args, label=n.label, **n.attr_dict), lay, "NCHW")

    def cancel(n: Node):
        x = n.src[0]
        if x.op is Op.LAYOUT_TRANSFORM and x.attr("src_layout") == n.attr("dst_layout") \
                and x.attr("dst_layout") == n.attr("src_layout"):
            return x.src[0]
        return None

    rules = {Op.CONV2D: [conv], Op.LAYOUT_TRANSFORM: [cancel]}
    rules.update({op: [unary] for op in UNARY})
    rules.update({op: [binary] for op in BINARY})
    return rewrite(graph, rules), dict(params)
