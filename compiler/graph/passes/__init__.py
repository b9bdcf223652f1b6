"""Graph passes. Each module holds one pass with one entry point
`pass(graph, params) -> (graph, params)` (params are never mutated; a new
dict comes back); `plan_memory` is an analysis returning a `MemoryPlan`.
"""

from .alter_layout import alter_layout
from .assign_layout import assign_layout
from .dce import eliminate_dead_code
from .fold_batch_norm import fold_batch_norm
from .fold_constants import fold_constants
from .fuse_ops import fuse_ops
from .infer_types import infer_types
from .plan_memory import MemoryPlan, plan_memory

__all__ = ["alter_layout", "assign_layout", "eliminate_dead_code", "fold_batch_norm", "fold_constants", "fuse_ops",
           "infer_types", "plan_memory", "MemoryPlan"]
