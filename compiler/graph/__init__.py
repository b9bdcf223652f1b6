"""Graph IR and its passes.

- `ir`: `Node` (one immutable node type), `Graph`, `make`, `input_node`, `param_node`.
- `ops`: the `Op` enum and fusion pattern `Kind`s; `opdefs`: per-op inference,
  kind and numpy reference; `registry.lookup(op)`.
- `reference.run(graph, params, inputs)`: numpy reference executor.
- `passes`: one pass per module; `pipeline.optimize(graph, params, ...)` runs them.
- `verify.verify(graph, params)`: the IR verifier; `format_graph(graph)`: text form.
"""

from .errors import GraphError
from .ir import Graph, Node, input_node, make, param_node
from .ops import Kind, Op
from .pipeline import Optimized, Pass, default_pipeline, optimize
from .printer import format_graph
from .reference import run

__all__ = ["Graph", "GraphError", "Kind", "Node", "Op", "Optimized", "Pass", "default_pipeline", "format_graph",
           "input_node", "make", "optimize", "param_node", "run"]
