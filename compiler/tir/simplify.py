"""The integer simplifier: a rule table for `RuleTable`, and the `simplify` pass.

Integer sums are kept in one canonical form (terms sorted by their printed form,
constant last) so that affine index arithmetic folds: (i*4 + j) - (j + i*4) -> 0,
(x // 8)*8 + x % 8 -> x. Divisions and comparisons use constant bounds of the
variables in scope (loop ranges) so that the boundary checks of splits that divide
evenly become `true` and disappear.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field

from . import dtype as dt
from . import ir
from .bounds import const_bounds, loop_range
from .ops import Op
from .printer import expr_str
from .rewrite import C, P, RuleTable, V
from .visit import map_stmt, substitute_stmt


@dataclass
class Ctx:
    """Constant inclusive ranges of the variables in scope."""

    ranges: dict = field(default_factory=dict)


def _int(e: ir.Expr) -> bool:
    return dt.is_int(e.dtype) and dt.lanes(e.dtype) == 1


# ------------------------------------------------------------ constant folding

def _fdiv(a, b):
    return a // b if b != 0 else None


def _fmod(a, b):
    return a % b if b != 0 else None


_FOLD = {Op.ADD: operator.add, Op.SUB: operator.sub, Op.MUL: operator.mul, Op.DIV: operator.truediv,
         Op.FLOORDIV: _fdiv, Op.FLOORMOD: _fmod, Op.MIN: min, Op.MAX: max,
         Op.EQ: operator.eq, Op.NE: operator.ne, Op.LT: operator.lt, Op.LE: operator.le,
         Op.GT: operator.gt, Op.GE: operator.ge, Op.AND: lambda a, b: a and b,
         Op.OR: lambda a, b: a or b}


def fold_binary(ctx, node, a, b):
    if node.op is Op.DIV and b.arg == 0:
        return None
    v = _FOLD[node.op](a.arg, b.arg)
    return None if v is None else ir.const(v, node.dtype)


def fold_cast(ctx, node, a):
    if dt.lanes(node.dtype) != 1:
        return None
    if dt.is_int(node.dtype) and dt.is_float(a.dtype):
        return ir.const(math.trunc(a.arg), node.dtype)
    return ir.const(a.arg, node.dtype)


def fold_not(ctx, node, a):
    return ir.const(not a.arg)


def not_not(ctx, node, a):
    return a


def fold_select(ctx, node, c, a, b):
    return a if c.arg else b


def same_select(ctx, node, c, a):
    return a


def and_const(ctx, node, x, c):
    return x if c.arg else c


def or_const(ctx, node, x, c):
    return c if c.arg else x


def idempotent(ctx, node, x):
    return x


# ------------------------------------------------------------ linear sums

def linear(e: ir.Expr) -> tuple[dict, int]:
    """e as ({atom: coefficient}, constant) over integer ADD/SUB/MUL-by-constant."""
    if e.op is Op.CONST:
        return {}, e.arg
    if e.op in (Op.ADD, Op.SUB):
        ta, ca = linear(e.src[0])
        tb, cb = linear(e.src[1])
        sign = 1 if e.op is Op.ADD else -1
        out = dict(ta)
        for k, v in tb.items():
            out[k] = out.get(k, 0) + sign * v
        return {k: v for k, v in out.items() if v != 0}, ca + sign * cb
    if e.op is Op.MUL:
        a, b = e.src
        if a.op is Op.CONST:
            a, b = b, a
        if b.op is Op.CONST:
            t, c = linear(a)
            return ({k: v * b.arg for k, v in t.items() if v * b.arg != 0}, c * b.arg)
    return {e: 1}, 0


def build(terms: dict, const: int, dtype: str) -> ir.Expr:
    """The canonical expression of a linear sum."""
    out = None
    for atom, coef in sorted(terms.items(), key=lambda kv: expr_str(kv[0])):
        mag = atom if abs(coef) == 1 else ir.Expr(Op.MUL, dtype, (atom, ir.const(abs(coef), dtype)))
        if out is None:
            out = mag if coef > 0 else ir.Expr(Op.MUL, dtype, (atom, ir.const(coef, dtype)))
        else:
            out = ir.Expr(Op.ADD if coef > 0 else Op.SUB, dtype, (out, mag))
    if out is None:
        return ir.const(const, dtype)
    if const != 0:
        out = ir.Expr(Op.ADD if const > 0 else Op.SUB, dtype, (out, ir.const(abs(const), dtype)))
    return out


def _recombine_divmod(terms: dict) -> dict:
    """(x // c)*(c*k) + (x % c)*k -> x*k."""
    for atom in list(terms):
        if atom.op is not Op.FLOORMOD or atom not in terms:
            continue
        x, c = atom.src
        div = ir.Expr(Op.FLOORDIV, atom.dtype, (x, c))
        k = terms[atom]
        if c.op is Op.CONST and terms.get(div) == k * c.arg:
            del terms[atom], terms[div]
            xt, xc = linear(x)
            for a, v in xt.items():
                terms[a] = terms.get(a, 0) + v * k
            terms[ir.const(0)] = terms.get(ir.const(0), 0) + xc * k
    const = terms.pop(ir.const(0), 0)
    return {a: v for a, v in terms.items() if v != 0}, const


def canonical(e: ir.Expr) -> ir.Expr:
    """The canonical form of integer sum `e`."""
    terms, const = linear(e)
    terms, extra = _recombine_divmod(dict(terms))
    return build(terms, const + extra, e.dtype)


def canonical_sum(ctx, node):
    return canonical(node) if _int(node) else None


# ------------------------------------------------------------ division

def _split_multiples(x: ir.Expr, c: int):
    terms, const = linear(x)
    q = {a: v // c for a, v in terms.items() if v % c == 0}
    r = {a: v for a, v in terms.items() if v % c != 0}
    return q, const // c, r, const % c


def div_rules(ctx, node, x, c):
    if not _int(node) or c.arg <= 0:
        return None
    k = c.arg
    if k == 1:
        return x
    lo, hi = const_bounds(x, ctx.ranges)
    if lo > -math.inf and hi < math.inf and lo // k == hi // k:
        return ir.const(lo // k, node.dtype)
    if x.op is Op.FLOORDIV and x.src[1].op is Op.CONST and x.src[1].arg > 0:
        return ir.Expr(Op.FLOORDIV, node.dtype, (x.src[0], ir.const(x.src[1].arg * k, node.dtype)))
    q, qc, r, rc = _split_multiples(x, k)
    if not q and qc == 0:
        return None
    rest = build(r, rc, node.dtype)
    return ir.Expr(Op.ADD, node.dtype, (build(q, qc, node.dtype),
                                        ir.Expr(Op.FLOORDIV, node.dtype, (rest, c))))


def mod_rules(ctx, node, x, c):
    if not _int(node) or c.arg <= 0:
        return None
    k = c.arg
    if k == 1:
        return ir.const(0, node.dtype)
    lo, hi = const_bounds(x, ctx.ranges)
    if lo == hi and lo > -math.inf:     # one value (a loop of extent 1): (bo*16) % 16, bo in [0, 0]
        return ir.const(lo % k, node.dtype)
    if x.op is Op.FLOORMOD and x.src[1].op is Op.CONST and x.src[1].arg % k == 0:
        return ir.Expr(Op.FLOORMOD, node.dtype, (x.src[0], c))
    q, qc, r, rc = _split_multiples(x, k)
    if q or qc != 0:                    # multiples of k drop out whatever the ranges
        return ir.Expr(Op.FLOORMOD, node.dtype, (build(r, rc, node.dtype), c))
    if lo >= 0 and hi < math.inf and lo // k == hi // k:   # within one period
        return x if lo // k == 0 else x - (lo // k) * k
    return None


# ------------------------------------------------------------ comparisons, min/max

def _diff_bounds(ctx, a: ir.Expr, b: ir.Expr):
    return const_bounds(canonical(ir.Expr(Op.SUB, a.dtype, (a, b))), ctx.ranges)


def compare_rules(ctx, node, a, b):
    if not _int(a):
        return None
    lo, hi = _diff_bounds(ctx, a, b)
    decide = {Op.LT: (hi < 0, lo >= 0), Op.LE: (hi <= 0, lo > 0), Op.GT: (lo > 0, hi <= 0),
              Op.GE: (lo >= 0, hi < 0), Op.EQ: (lo == hi == 0, lo > 0 or hi < 0),
              Op.NE: (lo > 0 or hi < 0, lo == hi == 0)}[node.op]
    if decide[0]:
        return ir.const(True)
    if decide[1]:
        return ir.const(False)
    return None


def minmax_rules(ctx, node, a, b):
    if a == b:
        return a
    if not _int(a):
        return None
    lo, hi = _diff_bounds(ctx, a, b)
    if hi <= 0:
        return a if node.op is Op.MIN else b
    if lo >= 0:
        return b if node.op is Op.MIN else a
    return None


_ARITH = frozenset({Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.FLOORDIV, Op.FLOORMOD, Op.MIN, Op.MAX,
                    Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE, Op.AND, Op.OR})
_CMP = frozenset({Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE})

RULES = RuleTable([
    # constant folding
    (P(_ARITH, C("a"), C("b")), fold_binary),
    (P(Op.CAST, C("a")), fold_cast),
    (P(Op.NOT, C("a")), fold_not),
    (P(Op.NOT, P(Op.NOT, V("a"))), not_not),
    (P(Op.SELECT, C("c"), V("a"), V("b")), fold_select),
    (P(Op.SELECT, V("c"), V("a"), V("a")), same_select),
    # logic
    (P(Op.AND, V("x"), C("c")), and_const),
    (P(Op.OR, V("x"), C("c")), or_const),
    (P(frozenset({Op.AND, Op.OR}), V("x"), V("x")), idempotent),
    # integer sums in canonical form
    (P(frozenset({Op.ADD, Op.SUB, Op.MUL})), canonical_sum),
    # division by positive constants
    (P(Op.FLOORDIV, V("x"), C("c")), div_rules),
    (P(Op.FLOORMOD, V("x"), C("c")), mod_rules),
    # decided by bounds
    (P(_CMP, V("a"), V("b")), compare_rules),
    (P(frozenset({Op.MIN, Op.MAX}), V("a"), V("b")), minmax_rules),
])


def simplify_expr(e: ir.Expr, ranges: dict | None = None) -> ir.Expr:
    """Simplify `e` given constant inclusive ranges {VAR: (lo, hi)} of its variables."""
    return RULES.rewrite(e, Ctx(dict(ranges or {})))


def simplify_stmt(s: ir.Stmt, ranges: dict | None = None) -> ir.Stmt:
    """Simplify every expression with the ranges of enclosing loops; drop statements whose
    condition is constant, loops of extent 0, and substitute loops of extent 1."""
    ranges = dict(ranges or {})
    memo: dict = {}

    def ex(e):
        return RULES.rewrite(e, Ctx(ranges), memo)

    def go(x: ir.Stmt) -> ir.Stmt | None:
        if isinstance(x, ir.SeqStmt):
            out = ir.seq(*(go(c) for c in x.stmts))
            return None if isinstance(out, ir.SeqStmt) and not out.stmts else out
        if isinstance(x, ir.For):
            lo, ext = ex(x.min), ex(x.extent)
            if ext.op is Op.CONST and ext.arg <= 0:
                return None
            if ext.op is Op.CONST and ext.arg == 1 and x.thread is None:
                return go(substitute_stmt(x.body, {x.var: lo}))
            saved = dict(ranges)
            memo_saved = dict(memo)
            ranges[x.var] = loop_range(lo, ext, ranges)
            memo.clear()
            body = go(x.body)
            ranges.clear()
            ranges.update(saved)
            memo.clear()
            memo.update(memo_saved)
            return None if body is None else ir.For(x.var, lo, ext, x.kind, body, x.thread)
        if isinstance(x, ir.IfThenElse):
            c = ex(x.cond)
            if c.op is Op.CONST:
                return go(x.then_case) if c.arg else (None if x.else_case is None else go(x.else_case))
            t = go(x.then_case)
            f = None if x.else_case is None else go(x.else_case)
            if t is None and f is None:
                return None
            if t is None:
                return ir.IfThenElse(ir.Expr(Op.NOT, "bool", (c,)), f)
            return ir.IfThenElse(c, t, f)
        if isinstance(x, (ir.Allocate, ir.LetStmt, ir.AttrStmt)):
            body = go(x.body)
            if body is None:
                return None
            if isinstance(x, ir.Allocate):
                return ir.Allocate(x.buffer, body)
            if isinstance(x, ir.LetStmt):
                return ir.LetStmt(x.var, ex(x.value), body)
            return ir.AttrStmt(x.key, x.value, body)
        return map_stmt(x, ex)

    out = go(s)
    return ir.SeqStmt(()) if out is None else out


def simplify(func: ir.PrimFunc) -> ir.PrimFunc:
    """Pass: simplify every expression of `func`."""
    return ir.PrimFunc(func.name, func.params, simplify_stmt(func.body))
