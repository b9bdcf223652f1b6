"""``dtype="bfloat16"``: mark a graph's dense layers and convolutions to compute in bf16 with
fp32 accumulation.

``mark_bf16(graph, keep_fp32)`` sets ``compute_dtype="bfloat16"`` on every DENSE and CONV2D
node but those in ``keep_fp32`` (which ones stay fp32 is the accuracy rule of
``compiler.graph_lower.bf16_accuracy``); the strategy registry then picks the bf16
implementation (``impls/dense_bf16.py``, ``impls/conv_bf16.py``) where the target has
AVX512-BF16 and the layer fits it, and the fp32 one elsewhere (depthwise convs, for one).
Activations between layers stay float32. A plain fp32 build never marks anything, so never
uses bf16.
"""
from __future__ import annotations

from typing import Collection

from compiler.graph import Graph, Node, Op
from compiler.graph.ir import make

#: the ops a bf16 build computes in bf16
BF16_OPS = (Op.DENSE, Op.CONV2D)


def mark_bf16(graph: Graph, keep_fp32: "Collection[Node]" = ()) -> Graph:
    """``graph`` with its DENSE and CONV2D nodes marked ``compute_dtype="bfloat16"``, except
    the nodes of ``graph`` in ``keep_fp32``."""
    keep = set(keep_fp32)
    memo: dict[Node, Node] = {}
    for n in graph.nodes():
        src = tuple(memo[s] for s in n.src)
        new = n if n.op in (Op.INPUT, Op.PARAM) or src == n.src else n.with_src(*src)
        if n.op in BF16_OPS and n not in keep and n.attr("compute_dtype") != "bfloat16":
            new = make(n.op, *new.src, label=n.label, **n.attr_dict, compute_dtype="bfloat16")
        memo[n] = new
    return Graph(graph.inputs, tuple(memo[o] for o in graph.outputs), graph.output_names)
