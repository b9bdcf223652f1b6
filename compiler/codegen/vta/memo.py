"""What a uop kernel's instructions depend on, so the code generator builds each once.

The code generator runs the loops around a kernel (``pragma_uop_scope``) at compile
time; every iteration used to evaluate the kernel's index grids, fold them and check
them again, although most iterations give the same instructions (the accumulator
tile's ALU ops differ only where an edge tile is smaller). The instructions of a
kernel statement are a function of the values of its *outer inputs*: the largest
subexpressions that read only variables bound outside the statement (``outer_inputs``),
and of where its SRAM buffers sit. ``codegen._Gen.kernel`` keys a cache on those
values, so a build costs one evaluation of the inputs per iteration, plus one full
kernel build per distinct key: the compiler's time grows with the instructions it
emits, not with the work of building each.
"""
from __future__ import annotations

from compiler.tir import ir
from compiler.tir.ops import Op
from compiler.tir.visit import walk_stmt

#: Operations ``eval.evaluate`` computes; anything else (LOAD, CALL, ...) is looked into.
_EVALUABLE = frozenset({Op.CONST, Op.VAR, Op.ADD, Op.SUB, Op.MUL, Op.FLOORDIV, Op.FLOORMOD,
                        Op.MIN, Op.MAX, Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE, Op.AND,
                        Op.OR, Op.NOT, Op.SELECT, Op.CAST})


def _exprs(s: ir.Stmt):
    """Every expression field of the statements in ``s``."""
    for x in walk_stmt(s):
        if isinstance(x, ir.For):
            yield from (x.var, x.min, x.extent)
        elif isinstance(x, ir.Store):
            yield x.value
            yield from (i for i in x.indices if isinstance(i, ir.Expr))
        elif isinstance(x, ir.IfThenElse):
            yield x.cond
        elif isinstance(x, ir.LetStmt):
            yield from (x.var, x.value)
        elif isinstance(x, ir.Evaluate):
            yield x.value


def _inner_names(s: ir.Stmt) -> set[str]:
    """Variables bound inside ``s`` (loops, lets, LET expressions)."""
    names = {x.var.arg for x in walk_stmt(s) if isinstance(x, (ir.For, ir.LetStmt))}
    stack = list(_exprs(s))
    seen = set()
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if e.op is Op.LET:
            names.add(e.src[0].arg)
        stack.extend(e.src)
    return names


def outer_inputs(s: ir.Stmt) -> tuple[ir.Expr, ...]:
    """The largest evaluable subexpressions of ``s`` that read only variables bound outside
    it (constants left out), once each, in a fixed order."""
    inner = _inner_names(s)
    reads_inner: dict[int, bool] = {}

    def inside(e: ir.Expr) -> bool:
        """Whether ``e`` reads an inner variable or holds an operation evaluate refuses."""
        hit = reads_inner.get(id(e))
        if hit is None:
            own = e.op not in _EVALUABLE or (e.op is Op.VAR and e.arg in inner)
            hit = reads_inner[id(e)] = own | any([inside(c) for c in e.src])
        return hit

    found: dict[ir.Expr, None] = {}
    stack = list(_exprs(s))[::-1]
    while stack:
        e = stack.pop()
        if not inside(e):
            if e.op is not Op.CONST:
                found.setdefault(e)
            continue
        stack.extend(reversed(e.src))
    return tuple(found)
