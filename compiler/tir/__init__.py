"""Loop IR (`ir`), its simplifier, passes, verifier and reference interpreter.

`lower(schedule, args, name)` turns a te schedule into a PrimFunc for code
generation (imported lazily: `compiler.te` builds on this package).
"""

from .ir import (Allocate, AttrStmt, Buffer, Evaluate, Expr, For, IfThenElse, LetStmt, PrimFunc,
                 SeqStmt, Stmt, Store)
from .ops import ForKind, Op
from .pipeline import DEFAULT_PIPELINE, run_pipeline
from .simplify import simplify, simplify_expr, simplify_stmt
from .verify import IRError, verify


def __getattr__(name: str):
    if name == "lower":
        from .lowering import lower
        return lower
    raise AttributeError(f"module 'compiler.tir' has no attribute {name!r}")


__all__ = ["Allocate", "AttrStmt", "Buffer", "DEFAULT_PIPELINE", "Evaluate", "Expr", "For", "ForKind",
           "IRError", "IfThenElse", "LetStmt", "Op", "PrimFunc", "SeqStmt", "Stmt", "Store", "lower",
           "run_pipeline", "simplify", "simplify_expr", "simplify_stmt", "verify"]
