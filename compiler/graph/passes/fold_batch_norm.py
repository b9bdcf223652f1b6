"""Batch-norm folding.

BATCH_NORM(CONV2D(x, w)) -> ADD(CONV2D(x, w * s), shift) and
BATCH_NORM(ADD(CONV2D(x, w), b)) -> ADD(CONV2D(x, w * s), b * s + shift),
with s = gamma / sqrt(var + eps) per output channel and
shift = beta - mean * s, when the conv (NCHW, constant weight) and its bias
add feed nothing else. Every other BATCH_NORM becomes MUL(x, s) + shift
(inference simplification). New weights are computed here (numpy) and
stored as fresh PARAMs.
"""

from __future__ import annotations

import numpy as np

from ..ir import Graph, Node, make, param_node
from ..ops import LEAVES, Op
from .names import fresh_name


def _bn_scale_shift(bn: Node, params) -> tuple[np.ndarray, np.ndarray] | None:
    if any(s.op is not Op.PARAM for s in bn.src[1:]):
        return None
    gamma, beta, mean, var = (params[s.name] for s in bn.src[1:])
    scale = gamma / np.sqrt(var + np.asarray(bn.attr("epsilon"), var.dtype))
    return scale, beta - mean * scale


def fold_batch_norm(graph: Graph, params: dict) -> tuple[Graph, dict]:
    out = dict(params)
    users = graph.consumers()
    outputs = set(graph.outputs)
    only_bn = lambda n: n not in outputs and len(users.get(n, [])) == 1  # noqa: E731
    memo: dict[Node, Node] = {}

    def new_param(hint: str, value: np.ndarray) -> Node:
        name = fresh_name(out, hint)
        out[name] = np.require(value, requirements="C")
        return param_node(name, out[name])

    for n in graph.nodes():
        if n.op in LEAVES:
            memo[n] = n
            continue
        if n.op is not Op.BATCH_NORM or (ss := _bn_scale_shift(n, out)) is None:
            memo[n] = n.with_src(*(memo[s] for s in n.src)) if any(memo[s] is not s for s in n.src) else n
            continue
        scale, shift = ss
        x = n.src[0]
        bias = None
        if (x.op is Op.ADD and only_bn(x) and x.src[0].op is Op.CONV2D and x.src[1].op is Op.PARAM
                and out[x.src[1].name].size == scale.size and out[x.src[1].name].ndim >= 1):
            bias, x = out[x.src[1].name].reshape(-1), x.src[0]
        conv_ok = (x.op is Op.CONV2D and only_bn(x) and x.src[1].op is Op.PARAM
                   and x.attr("data_layout", "NCHW") == "NCHW" and x.shape[1] == scale.size)
        cshape = (scale.size,) + (1,) * (len(n.shape) - 2)
        if conv_ok:
            w = out[x.src[1].name]
            w2 = new_param(f"{x.src[1].name}_bnfold", (w * scale.reshape(-1, 1, 1, 1)).astype(w.dtype))
            conv = make(Op.CONV2D, memo[x.src[0]], w2, label=x.label, **x.attr_dict)
            b = shift if bias is None else bias * scale + shift
            memo[n] = make(Op.ADD, conv, new_param(f"{n.label or 'bn'}_bias", b.reshape(cshape).astype(w.dtype)),
                           label=n.label)
        else:
            mul = make(Op.MUL, memo[n.src[0]], new_param(f"{n.label or 'bn'}_scale", scale.reshape(cshape).astype(n.dtype)),
                       label=n.label)
            memo[n] = make(Op.ADD, mul, new_param(f"{n.label or 'bn'}_shift", shift.reshape(cshape).astype(n.dtype)), label=n.label)
    return Graph(graph.inputs, tuple(memo[o] for o in graph.outputs), graph.output_names), out
