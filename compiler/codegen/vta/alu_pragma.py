"""The ALU pragma (TVM-VTA's ``env.alu``): an elementwise stage's loops -> ALU intrinsics.

``s[C_buf].pragma(s[C_buf].op.axis[0], env.alu)`` on a stage in
``local.acc_buffer`` lowers to ``AttrStmt("pragma_alu")`` around the stage's
loop nest, whose leaf stores an int32 expression of accumulator loads and
constants. ``inject_alu`` pattern-matches that expression into a chain of ALU
ops (``match``, from the ``PATTERNS`` table keyed by the loop IR's ops; each
entry an op of ``vta_hw.alu``'s table) and replaces the nest by one
``AttrStmt("tensorize", "vta.alu.<OP>")`` per op at the same outer loops, the
form ``compiler.codegen.vta`` runs (``intrin.alu``): the first op writes
``dst = op(lhs, operand)`` (in place: ``dst`` takes ``lhs``'s entries), the
rest update ``dst`` in place. The code generator then folds the outer loops
into each instruction (its automatic uop folding).

Forms (``x`` the stage's left operand, an accumulator load at the stored
element; ``y`` another accumulator tensor at the same element; ``c`` an int
constant in the signed 16-bit immediate; ``n`` in [0, 31])::

    x + c, c + x, x - c, x + y        ADD (``x - c`` as ADD -c)
    x * c, c * x, x * y, x << n       MUL
    max(x, c), max(x, y)              MAX (relu: ``max(x, 0)``)
    min(x, c), min(x, y)              MIN
    x >> n, x // 2**n                 SHR
    x                                 SHR 0 (a copy)

nested to any depth through the left operand (``min(max(x, lo), hi)`` is a
clip: MAX then MIN; ``(x + y) >> 8`` is ADD then SHR); int32 casts of int32
values are transparent. The loops innermost in the nest must walk exactly one
ACC element (BATCH x BLOCK_OUT values, in order) and the other loops whole
elements: the instructions address elements.

Errors raise ``compiler.te.ScheduleError``, naming the stage, the expression
or loop, and the supported forms or the fix.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from compiler.te.schedule import ScheduleError
from compiler.tir import ir
from compiler.tir.ops import Op
from compiler.tir.simplify import simplify_expr
from compiler.tir.visit import substitute, uses_var
from compiler.topi.vta.environment import ACC_SCOPE, ALU_PREFIX, Env
from vta_hw.alu import IMM_CONTROL
from vta_hw.config import ALU_IMM_BITS
from vta_hw.isa import AluOp

from .eval import evaluate, flat_offset
from .threads import per_thread

#: The supported forms, for error messages (module docstring).
FORMS = ("x + c, x - c, x + y (ADD); x * c, x * y, x << n (MUL); max(x, c), max(x, y) (MAX); "
         "min(x, c), min(x, y) (MIN); x >> n, x // 2**n (SHR); nested through x, e.g. "
         "min(max(x, 0), 127); x and y int32 accumulator tensors at the stored element, c an "
         "int constant, n in [0, 31]")
_IMM_LO, _IMM_HI = -(1 << (ALU_IMM_BITS - 1)), (1 << (ALU_IMM_BITS - 1)) - 1


def _imm_same(c: int):
    return c


def _imm_negated(c: int):
    return -c


def _imm_log2(c: int):
    """The shift of ``x // c``: c a power of two, else None (no ALU op divides)."""
    return c.bit_length() - 1 if c > 0 and c & (c - 1) == 0 else None


#: loop-IR op -> (ALU op, commutative, how the constant operand becomes the immediate
#: or None where a tensor operand is not allowed); every ALU op of vta_hw.alu's table.
PATTERNS = {
    Op.ADD: (AluOp.ADD, True, _imm_same),
    Op.SUB: (AluOp.ADD, False, _imm_negated),
    Op.MUL: (AluOp.MUL, True, _imm_same),
    Op.MAX: (AluOp.MAX, True, _imm_same),
    Op.MIN: (AluOp.MIN, True, _imm_same),
    Op.FLOORDIV: (AluOp.SHR, False, _imm_log2),
}
#: the ops whose right operand may be a tensor (SUB: no ALU op subtracts a tensor;
#: FLOORDIV: no ALU op divides by a tensor)
_TENSOR_RIGHT = (Op.ADD, Op.MUL, Op.MAX, Op.MIN)
assert {p[0] for p in PATTERNS.values()} == set(AluOp) - IMM_CONTROL, \
    "every two-operand ALU op needs a pattern (REQUANT is the conv epilogue's, not a te form)"


def _strip_cast(e: ir.Expr) -> ir.Expr:
    while e.op is Op.CAST and e.dtype == "int32" and e.src[0].dtype == "int32":
        e = e.src[0]
    return e


def match(value: ir.Expr, stage: str,
          loops: str = "none") -> tuple[ir.Expr, list[tuple[AluOp, object]]]:
    """``(x, [(op, operand), ...])``: the left operand load and the ALU ops, in order, that
    compute ``value``; an operand is an int immediate or a LOAD of another tensor.

    Raises:
        ScheduleError: ``value`` is none of the forms (names ``stage``, its ``loops``, the
            expression and the forms).
    """
    def fail(why: str):
        raise ScheduleError(f"ALU pragma: stage {stage!r} (loops {loops}) computes {value}, which "
                            f"does not map onto the ALU ({why}); the ALU pragma supports {FORMS}. "
                            "Write the stage in those forms or split it into stages")

    def go(e: ir.Expr):
        e = _strip_cast(e)
        if e.op is Op.LOAD:
            if e.dtype != "int32":
                fail(f"{e} is {e.dtype}, the accumulator holds int32")
            return e, []
        if e.op not in PATTERNS:
            fail(f"{e.op.name.lower()} in {e} has no ALU op")
        alu_op, commutative, to_imm = PATTERNS[e.op]
        a, b = (_strip_cast(x) for x in e.src)
        if commutative and a.op is Op.CONST:
            a, b = b, a
        if b.op is Op.CONST:
            imm = to_imm(int(b.value))
            if imm is None:
                fail(f"{e} divides by {b.value}, not a power of two")
            if not _IMM_LO <= imm <= _IMM_HI:
                fail(f"the immediate {imm} of {e} does not fit the signed {ALU_IMM_BITS}-bit field")
            lhs, ops = go(a)
            return lhs, ops + [(alu_op, imm)]
        if e.op not in _TENSOR_RIGHT:
            fail(f"{e} needs a constant right operand")
        if b.op is not Op.LOAD and commutative and a.op is Op.LOAD:
            a, b = b, a
        if b.op is not Op.LOAD:
            fail(f"{e} combines two computed values; one operand must be a tensor or a constant")
        lhs, ops = go(a)
        if b.dtype != "int32":
            fail(f"{b} is {b.dtype}, the accumulator holds int32")
        return lhs, ops + [(alu_op, b)]

    return go(value)


def _ptr(buf: ir.Buffer, start: ir.Expr) -> ir.Evaluate:
    return ir.Evaluate(ir.Expr(Op.CALL, "handle", (ir.load(buf, (start,)),), "address_of"))


def _lower_nest(s: ir.Stmt, env: Env) -> ir.Stmt:
    """One thread's ALU pragma nest -> its ALU intrinsics (module docstring)."""
    loops, leaf = [], s
    while isinstance(leaf, ir.For):
        loops.append(leaf)
        leaf = leaf.body
    if not isinstance(leaf, ir.Store):
        found = (f"a boundary check `if {leaf.cond}`" if isinstance(leaf, ir.IfThenElse)
                 else f"a {type(leaf).__name__}")
        where = f"loop {loops[-1].var.name!r}" if loops else "the pragma"
        raise ScheduleError(f"ALU pragma: under {where} the nest holds {found}, not one store of an "
                            "elementwise stage; use split factors that divide the extents and put "
                            "the pragma on the outermost axis of a stage in local.acc_buffer")
    stage = leaf.buffer.name
    if leaf.buffer.scope != ACC_SCOPE:
        raise ScheduleError(f"ALU pragma: stage {stage!r} is in scope {leaf.buffer.scope!r}; the ALU "
                            f"works on {ACC_SCOPE}: set_scope(env.acc_scope) on it")
    lhs, ops = match(leaf.value, stage, ", ".join(repr(f.var.name) for f in loops) or "none")
    ev = env.elem_values(ACC_SCOPE)
    exts = []
    for f in loops:
        if f.extent.op is not Op.CONST or f.min.op is not Op.CONST:
            raise ScheduleError(f"ALU pragma: loop {f.var.name!r} of stage {stage!r} runs over "
                                f"[{f.min}, {f.min} + {f.extent}), not a constant range; give the "
                                "stage constant extents")
        exts.append(int(f.extent.value))
    k, n = len(loops), 1
    while k > 0 and n < ev:
        k -= 1
        n *= exts[k]
    inner, outer = loops[k:], loops[:k]
    names = ", ".join(repr(f.var.name) for f in inner) or "none"
    if n != ev:
        raise ScheduleError(f"ALU pragma: the innermost loops of stage {stage!r} ({names}) cover "
                            f"{n} values, but an ACC element holds {ev} (BATCH x BLOCK_OUT); keep the "
                            "stage's last two axes (BATCH, BLOCK_OUT) whole and innermost (no split "
                            "or reorder of them)")
    grid = {f.var.name: (np.arange(e) + int(f.min.value)).reshape(
        [e if j == i else 1 for j in range(len(inner))]) for i, (f, e) in enumerate(zip(inner, exts[k:]))}
    zero = {f.var: f.min for f in inner}

    def start(buf: ir.Buffer, indices) -> ir.Expr:
        """The flat offset of the element the inner loops walk (checked: in order, whole)."""
        off = flat_offset(buf, indices)
        first = simplify_expr(substitute(off, zero))
        lane = simplify_expr(off - first)
        bad = [f.var.name for f in outer if uses_var(lane, f.var)]
        got = None if bad else np.broadcast_to(evaluate(lane, grid), exts[k:]).reshape(-1)
        if got is None or not np.array_equal(got, np.arange(ev)):
            raise ScheduleError(f"ALU pragma: in stage {stage!r} the loops {names} do not walk one "
                                f"whole element of {buf.name!r} in order (offset {off}); keep the "
                                "stage's last two axes whole and innermost, and read every operand "
                                "at the stored element")
        return first

    dst = start(leaf.buffer, leaf.indices)
    lhs_at = start(lhs.arg, lhs.src)
    out = []
    for i, (op, operand) in enumerate(ops or [(AluOp.SHR, 0)]):
        if isinstance(operand, int):
            right = ir.Evaluate(ir.const(operand, "int32"))
        else:
            right = _ptr(operand.arg, start(operand.arg, operand.src))
        first = [_ptr(lhs.arg, lhs_at)] if i == 0 and (lhs.arg, lhs_at) != (leaf.buffer, dst) else []
        stmt: ir.Stmt = ir.AttrStmt("tensorize", ALU_PREFIX + op.name,
                                    ir.seq(_ptr(leaf.buffer, dst), *first, right))
        for f in reversed(outer):
            stmt = ir.For(f.var, f.min, f.extent, f.kind, stmt, f.thread)
        out.append(stmt)
    return ir.seq(*out)


def inject_alu(func: ir.PrimFunc, env: Env) -> ir.PrimFunc:
    """Pass: every ``pragma_alu`` nest of ``func`` -> ALU intrinsics (module docstring).

    Raises:
        ScheduleError: a nest whose expression or loops do not match (the message names
            the stage, the expression or loop, and the fix).
    """
    def go(s: ir.Stmt) -> ir.Stmt:
        if isinstance(s, ir.AttrStmt) and s.key == "pragma_alu":
            return ir.seq(*(_lower_nest(part, env) for part in per_thread(s.body)))
        if isinstance(s, ir.SeqStmt):
            return ir.seq(*(go(c) for c in s.stmts))
        if isinstance(s, (ir.For, ir.Allocate, ir.LetStmt, ir.AttrStmt)):
            body = go(s.body)
            return s if body is s.body else dataclasses.replace(s, body=body)
        if isinstance(s, ir.IfThenElse):
            t = go(s.then_case)
            e = None if s.else_case is None else go(s.else_case)
            return s if t is s.then_case and e is s.else_case else ir.IfThenElse(s.cond, t, e)
        return s

    body = go(func.body)
    return func if body is func.body else ir.PrimFunc(func.name, func.params, body)
