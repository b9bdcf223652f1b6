"""A rewrite engine: rules are (pattern, function) pairs, applied bottom-up to a fixed point.

Patterns: `P(op, *src)` matches a node of that op (of one op from a set) whose
operands match `src` (commutative ops try both orders), `V(name)` matches any
expression, `C(name)` any constant; a name used twice must match equal
expressions. A rule function gets the context, the matched node and the bound
names as keyword arguments, and returns a replacement or None.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from . import ir
from .ops import COMMUTATIVE, Op


@dataclass(frozen=True)
class Pat:
    ops: frozenset[Op] | None = None       # None: any op
    src: tuple[Pat, ...] | None = None     # None: any operands
    name: str | None = None


def P(op: Op | frozenset[Op], *src: Pat, name: str | None = None) -> Pat:
    ops = op if isinstance(op, frozenset) else frozenset({op})
    return Pat(ops, src if src else None, name)


def V(name: str) -> Pat:
    return Pat(None, None, name)


def C(name: str) -> Pat:
    return Pat(frozenset({Op.CONST}), None, name)


def match(pat: Pat, e: ir.Expr, binds: dict) -> bool:
    """Match `e` against `pat`, extending `binds`; on failure `binds` may hold partial names."""
    if pat.ops is not None and e.op not in pat.ops:
        return False
    if pat.name is not None:
        prev = binds.get(pat.name)
        if prev is not None and prev != e:
            return False
        binds[pat.name] = e
    if pat.src is None:
        return True
    if len(pat.src) != len(e.src):
        return False
    saved = dict(binds)
    if all(match(p, s, binds) for p, s in zip(pat.src, e.src)):
        return True
    if e.op in COMMUTATIVE and len(e.src) == 2:
        binds.clear()
        binds.update(saved)
        return match(pat.src[0], e.src[1], binds) and match(pat.src[1], e.src[0], binds)
    return False


Rule = tuple[Pat, Callable[..., "ir.Expr | None"]]


class RuleTable:
    """Rules indexed by the ops their patterns can match."""

    def __init__(self, rules: list[Rule]):
        self.by_op: dict[Op, list[Rule]] = {op: [] for op in Op}
        for pat, fn in rules:
            for op in (pat.ops if pat.ops is not None else Op):
                self.by_op[op].append((pat, fn))

    def rewrite(self, e: ir.Expr, ctx, memo: dict | None = None, max_steps: int = 100) -> ir.Expr:
        """Rewrite `e` bottom-up until no rule applies."""
        memo = {} if memo is None else memo

        def go(x: ir.Expr) -> ir.Expr:
            hit = memo.get(x)
            if hit is not None:
                return hit
            y = ir.map_children(x, go)
            for _ in range(max_steps):
                z = self._apply(y, ctx)
                if z is None:
                    break
                y = ir.map_children(z, go)
            memo[x] = y
            return y

        return go(e)

    def _apply(self, e: ir.Expr, ctx) -> ir.Expr | None:
        for pat, fn in self.by_op[e.op]:
            binds: dict = {}
            if match(pat, e, binds):
                out = fn(ctx, e, **binds)
                if out is not None and out != e:
                    return out
        return None
