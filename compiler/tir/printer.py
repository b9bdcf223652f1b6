"""Text form of the loop IR that reads like code: `expr_str`, `stmt_str`, `func_str`."""

from __future__ import annotations

from . import ir
from .ops import Op

_INFIX = {Op.ADD: "+", Op.SUB: "-", Op.MUL: "*", Op.DIV: "/", Op.FLOORDIV: "//", Op.FLOORMOD: "%",
          Op.EQ: "==", Op.NE: "!=", Op.LT: "<", Op.LE: "<=", Op.GT: ">", Op.GE: ">=",
          Op.AND: "&&", Op.OR: "||"}


def expr_str(e: ir.Expr) -> str:
    op = e.op
    if op is Op.CONST:
        v = e.arg
        if e.dtype == "int32" or e.dtype == "bool":
            return str(v)
        return f"{v}f" if e.dtype == "float32" else f"{v}:{e.dtype}"
    if op is Op.VAR:
        return e.arg
    if op in _INFIX:
        return f"({expr_str(e.src[0])} {_INFIX[op]} {expr_str(e.src[1])})"
    args = ", ".join(expr_str(s) for s in e.src)
    if op in (Op.MIN, Op.MAX):
        return f"{op.name.lower()}({args})"
    if op is Op.NOT:
        return f"!{expr_str(e.src[0])}"
    if op is Op.SELECT:
        return f"select({args})"
    if op is Op.CAST:
        return f"{e.dtype}({args})"
    if op is Op.CALL:
        return f"{e.arg}({args})"
    if op is Op.LET:
        v, val, body = (expr_str(s) for s in e.src)
        return f"(let {v} = {val} in {body})"
    if op is Op.LOAD:
        return f"{e.arg.name}[{args}]"
    if op is Op.RAMP:
        return f"ramp({args}, {e.arg})"
    if op is Op.BROADCAST:
        return f"broadcast({args}, {e.arg})"
    if op is Op.TENSOR_READ:
        return f"{e.arg.name}[{args}]"
    if op is Op.REDUCE:
        combiner, axes = e.arg
        where = "" if ir.is_const(e.src[1], True) else f", where={expr_str(e.src[1])}"
        return f"{combiner}({expr_str(e.src[0])}, axis=[{', '.join(a.name for a in axes)}]{where})"
    raise AssertionError(op)


def stmt_str(s: ir.Stmt, indent: int = 0) -> str:
    pad = "  " * indent
    if isinstance(s, ir.SeqStmt):
        return "".join(stmt_str(c, indent) for c in s.stmts)
    if isinstance(s, ir.For):
        kind = s.kind.value if s.thread is None else f"{s.kind.value} thread={s.thread}"
        if s.min.op is Op.CONST and s.extent.op is Op.CONST:
            end = str(s.min.arg + s.extent.arg)
        else:
            end = expr_str(s.extent) if ir.is_const(s.min, 0) else expr_str(s.min + s.extent)
        head = f"{pad}for {s.var.name} in range({expr_str(s.min)}, {end}):  # {kind}"
        return f"{head}\n{stmt_str(s.body, indent + 1)}"
    if isinstance(s, ir.Store):
        idx = ", ".join(expr_str(i) for i in s.indices)
        return f"{pad}{s.buffer.name}[{idx}] = {expr_str(s.value)}\n"
    if isinstance(s, ir.Allocate):
        b = s.buffer
        return (f"{pad}{b.name} = allocate({b.dtype}, {list(b.shape)}, scope={b.scope!r})\n"
                f"{stmt_str(s.body, indent)}")
    if isinstance(s, ir.IfThenElse):
        out = f"{pad}if {expr_str(s.cond)}:\n{stmt_str(s.then_case, indent + 1)}"
        if s.else_case is not None:
            out += f"{pad}else:\n{stmt_str(s.else_case, indent + 1)}"
        return out
    if isinstance(s, ir.LetStmt):
        return f"{pad}{s.var.name} = {expr_str(s.value)}\n{stmt_str(s.body, indent)}"
    if isinstance(s, ir.Evaluate):
        return f"{pad}{expr_str(s.value)}\n"
    if isinstance(s, ir.AttrStmt):
        return f"{pad}with attr({s.key!r}, {s.value!r}):\n{stmt_str(s.body, indent + 1)}"
    raise TypeError(f"not a statement: {s!r}")


def func_str(f: ir.PrimFunc) -> str:
    params = ", ".join(f"{p.name}: {p.dtype}{list(p.shape)}" if isinstance(p, ir.Buffer)
                       else f"{p.name}: {p.dtype}" for p in f.params)
    return f"def {f.name}({params}):\n{stmt_str(f.body, 1)}"
