"""IR verifier: every pass's output must satisfy it (switched on in tests, `optimize(verify=True)`)."""

from __future__ import annotations

from typing import Mapping

import numpy as np

from .errors import GraphError
from .ir import Graph, Node
from .ops import Op
from .registry import lookup


def verify(graph: Graph, params: Mapping[str, np.ndarray] | None = None) -> None:
    """Check a graph; raise GraphError naming the first bad node.

    Checks: every node's shape/dtype equals what inference gives for its
    inputs; INPUT nodes are the graph's declared inputs; PARAM nodes exist in
    `params` with the declared shape and dtype; FUSED bodies verify
    recursively and read only their own inputs.
    """
    declared = set(graph.inputs)
    if len(graph.output_names) not in (0, len(graph.outputs)):
        raise GraphError(f"{len(graph.output_names)} output names for {len(graph.outputs)} outputs")
    for node in graph.nodes():
        if node.op is Op.INPUT:
            if node not in declared:
                raise GraphError(f"{node!r} is read but is not a declared graph input")
            continue
        if node.op is Op.PARAM:
            if params is not None:
                if node.name not in params:
                    raise GraphError(f"param {node.name!r} ({node.dtype}{list(node.shape)}) has no entry in params; "
                                     "pass the params dict that came with the graph")
                v = params[node.name]
                if tuple(v.shape) != node.shape or str(v.dtype) != node.dtype:
                    raise GraphError(f"param {node.name!r} is declared {node.dtype}{list(node.shape)} but params[{node.name!r}] "
                                     f"is {v.dtype}{list(v.shape)}")
            continue
        shape, dtype = lookup(node.op).infer(node.src, node.attr_dict)
        if (tuple(shape), str(np.dtype(dtype))) != (node.shape, node.dtype):
            raise GraphError(f"{node!r}: stored type differs from inferred {np.dtype(dtype)}{list(shape)}")
        if node.op is Op.FUSED:
            body: Graph = node.attr("body")
            if any(n.op is Op.PARAM for n in body.nodes()):
                raise GraphError(f"{node!r}: fused body reads a PARAM directly; params must be body inputs")
            verify(body, params)


def check_node(node: Node) -> None:
    """Re-run inference on one node (GraphError when it fails)."""
    lookup(node.op).infer(node.src, node.attr_dict)
