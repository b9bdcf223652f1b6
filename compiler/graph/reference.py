"""Numpy reference executor: runs a `Graph` (before or after any pass, fused or not).

`run(graph, params, inputs) -> list[np.ndarray]` evaluates every node once in
topological order with the op's numpy reference (`compiler.graph.opdefs`);
FUSED nodes run their body recursively. An optional `args_hook(node, args) ->
args` rewrites a node's input arrays before it runs (emulations of reduced
precision use it: `compiler.graph_lower.bf16_accuracy`). Intermediate arrays are
dropped once their last consumer ran, so peak memory follows the live set.
"""

from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from .errors import GraphError
from .ir import Graph, Node, toposort
from .ops import Op
from .registry import lookup


def run(graph: Graph, params: Mapping[str, np.ndarray], inputs: Mapping[str, np.ndarray],
        args_hook: "Callable[[Node, list], list] | None" = None) -> list[np.ndarray]:
    """Evaluate `graph`. `inputs` maps INPUT names to arrays of the declared shape;
    `args_hook(node, args)`, if given, returns the arrays each computed node reads instead
    of `args` (same shapes and dtypes).

    Raises GraphError naming the input when one is missing or has the wrong
    shape/dtype, or a PARAM absent from `params`.
    """
    env: dict[Node, np.ndarray] = {}
    for node in graph.inputs:
        if node.name not in inputs:
            raise GraphError(f"input {node.name!r} not given; pass inputs={{{node.name!r}: array{list(node.shape)}}}")
        value = np.asarray(inputs[node.name])
        if value.shape != node.shape:
            raise GraphError(f"input {node.name!r} has shape {list(value.shape)}, graph expects {list(node.shape)}")
        env[node] = value.astype(node.dtype, copy=False)
    return [v for v in _evaluate(graph.outputs, params, env, args_hook)]


def evaluate(node: Node, params: Mapping[str, np.ndarray]) -> np.ndarray:
    """Value of a node that depends on PARAMs only (constant folding). GraphError if it reads an INPUT."""
    return _evaluate((node,), params, {})[0]


def _evaluate(outputs, params, env: dict, args_hook=None) -> list[np.ndarray]:
    order = toposort(outputs)
    last_use: dict[Node, int] = {}
    for i, n in enumerate(order):
        for s in n.src:
            last_use[s] = i
    keep = set(outputs)
    for i, node in enumerate(order):
        if node in env:
            continue
        if node.op is Op.INPUT:
            raise GraphError(f"input {node.name!r} has no value (not a graph input, or not a constant expression)")
        if node.op is Op.PARAM:
            if node.name not in params:
                raise GraphError(f"param {node.name!r} missing from params")
            env[node] = np.asarray(params[node.name])
            continue
        args = [env[s] for s in node.src]
        if args_hook is not None and node.op is not Op.FUSED:
            args = args_hook(node, args)
        if node.op is Op.FUSED:
            body: Graph = node.attr("body")
            value = _evaluate(body.outputs, params, dict(zip(body.inputs, args)), args_hook)[0]
        else:
            value = lookup(node.op).compute(args, node.attr_dict)
        value = np.asarray(value)
        if value.shape != node.shape or value.dtype != np.dtype(node.dtype):
            raise GraphError(f"{node!r}: reference produced {value.dtype}{list(value.shape)}, "
                             f"inference said {node.dtype}{list(node.shape)}")
        env[node] = value
        for s in set(node.src):
            if last_use.get(s) == i and s not in keep:
                env.pop(s, None)
    return [env[o] for o in outputs]
