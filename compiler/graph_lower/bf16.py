"""``dtype="bfloat16"``: mark a graph's dense layers and convolutions to compute in bf16 with
fp32 accumulation.

``mark_bf16(graph)`` sets ``compute_dtype="bfloat16"`` on every DENSE and CONV2D node; the
strategy registry then picks the bf16 implementation (``impls/dense_bf16.py``,
``impls/conv_bf16.py``) where the target has AVX512-BF16 and the layer fits it, and the
fp32 one elsewhere (depthwise convs, for one). Activations between layers
stay float32. A plain fp32 build never marks anything, so never uses bf16.
"""
from __future__ import annotations

from compiler.graph import Graph, Op
from compiler.graph.ir import make
from compiler.graph.rewrite import rewrite

#: the ops a bf16 build computes in bf16
BF16_OPS = (Op.DENSE, Op.CONV2D)


def _mark(node):
    if node.attr("compute_dtype") == "bfloat16":
        return None
    return make(node.op, *node.src, label=node.label, **node.attr_dict, compute_dtype="bfloat16")


def mark_bf16(graph: Graph) -> Graph:
    """``graph`` with its DENSE and CONV2D nodes marked ``compute_dtype="bfloat16"``."""
    return rewrite(graph, {op: [_mark] for op in BF16_OPS})
