"""Generic traversals of the loop IR: post-order expression rewrite, statement mapping,
substitution, and walks over expressions and statements."""

from __future__ import annotations

from typing import Callable, Iterator

from . import ir


def rewrite_expr(e: ir.Expr, fn: Callable[[ir.Expr], ir.Expr | None], memo: dict | None = None) -> ir.Expr:
    """Bottom-up: rebuild children, then replace a node by `fn(node)` when that is not None."""
    memo = {} if memo is None else memo

    def go(x: ir.Expr) -> ir.Expr:
        hit = memo.get(x)
        if hit is not None:
            return hit
        y = ir.map_children(x, go)
        z = fn(y)
        out = y if z is None else z
        memo[x] = out
        return out

    return go(e)


def substitute(e: ir.Expr, mapping: dict[ir.Expr, ir.Expr]) -> ir.Expr:
    """Replace variables (or any sub-expressions) by the mapping, simultaneously."""
    if not mapping:
        return e
    return rewrite_expr(e, lambda x: mapping.get(x))


def map_stmt(s: ir.Stmt, expr_fn: Callable[[ir.Expr], ir.Expr],
             stmt_fn: Callable[[ir.Stmt], ir.Stmt | None] | None = None) -> ir.Stmt | None:
    """Rebuild `s` bottom-up: `expr_fn` on every expression field, then `stmt_fn` on each statement
    (a None result from stmt_fn drops the statement; SeqStmts of one element collapse)."""

    def go(x: ir.Stmt) -> ir.Stmt | None:
        if isinstance(x, ir.SeqStmt):
            y = ir.seq(*(go(c) for c in x.stmts))
            if isinstance(y, ir.SeqStmt) and len(y.stmts) == 0:
                y = None
        elif isinstance(x, ir.For):
            body = go(x.body)
            y = None if body is None else ir.For(expr_fn(x.var), expr_fn(x.min), expr_fn(x.extent),
                                                 x.kind, body, x.thread)
        elif isinstance(x, ir.Store):
            y = ir.Store(x.buffer, expr_fn(x.value), tuple(expr_fn(i) for i in x.indices))
        elif isinstance(x, ir.Allocate):
            body = go(x.body)
            y = None if body is None else ir.Allocate(x.buffer, body)
        elif isinstance(x, ir.IfThenElse):
            t = go(x.then_case)
            f = None if x.else_case is None else go(x.else_case)
            y = None if t is None and f is None else ir.IfThenElse(
                expr_fn(x.cond), t if t is not None else ir.SeqStmt(()), f)
        elif isinstance(x, ir.LetStmt):
            body = go(x.body)
            y = None if body is None else ir.LetStmt(expr_fn(x.var), expr_fn(x.value), body)
        elif isinstance(x, ir.Evaluate):
            y = ir.Evaluate(expr_fn(x.value))
        elif isinstance(x, ir.AttrStmt):
            body = go(x.body)
            y = None if body is None else ir.AttrStmt(x.key, x.value, body)
        else:
            raise TypeError(f"not a statement: {x!r}")
        if y is not None and stmt_fn is not None:
            y = stmt_fn(y)
        return y

    return go(s)


def substitute_stmt(s: ir.Stmt, mapping: dict[ir.Expr, ir.Expr]) -> ir.Stmt:
    memo: dict = {}
    return map_stmt(s, lambda e: rewrite_expr(e, lambda x: mapping.get(x), memo))


def walk_expr(e: ir.Expr) -> Iterator[ir.Expr]:
    """Every node of `e`, pre-order (shared sub-trees once)."""
    seen = set()
    stack = [e]
    while stack:
        x = stack.pop()
        if x in seen:
            continue
        seen.add(x)
        yield x
        stack.extend(reversed(x.src))


def walk_stmt(s: ir.Stmt) -> Iterator[ir.Stmt]:
    """Every statement in `s`, pre-order."""
    yield s
    if isinstance(s, ir.SeqStmt):
        for c in s.stmts:
            yield from walk_stmt(c)
    elif isinstance(s, (ir.For, ir.Allocate, ir.LetStmt, ir.AttrStmt)):
        yield from walk_stmt(s.body)
    elif isinstance(s, ir.IfThenElse):
        yield from walk_stmt(s.then_case)
        if s.else_case is not None:
            yield from walk_stmt(s.else_case)


def uses_var(e: ir.Expr, v: ir.Expr) -> bool:
    return any(x == v for x in walk_expr(e))
