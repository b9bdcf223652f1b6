"""Virtual threads and in-place ALU groups in the loop IR the VTA code generator reads.

``per_thread(s)``: the vthread pass (``tir.passes.vthread``) may sink the
thread copies into a copy nest or an intrinsic (te lowering does); the code
generator wants one DMA or kernel per thread, so it takes the statement once
per thread, each keeping only that thread's copies (``project``).

``inplace_aliases(body)``: te writes the ALU epilogue as stages ``out =
op(in, ...)`` in separate buffers, but the ALU updates ``acc[dst]`` in place;
each such result buffer becomes an alias of its operand (they share SRAM
entries), which is sound when the operand has no other reader.
"""
from __future__ import annotations

import dataclasses

from compiler.tir import ir
from compiler.tir.ops import Op
from compiler.tir.visit import walk_expr, walk_stmt
from compiler.topi.vta.environment import ALU_PREFIX
from vta_hw.alu import IMM_CONTROL

from .eval import CodegenError


def per_thread(s: ir.Stmt) -> list[ir.Stmt]:
    """``s`` once per virtual thread found inside it (each keeping only that thread's
    copies), or ``[s]`` when it has none: the vthread pass may sink the threads into
    a copy nest or an intrinsic; each thread's part becomes its own instructions."""
    ks = sorted({x.value for x in walk_stmt(s)
                 if isinstance(x, ir.AttrStmt) and x.key == "virtual_thread"})
    return [project(s, k) for k in ks] if ks else [s]


def project(s: ir.Stmt, k: int) -> ir.Stmt | None:
    if isinstance(s, ir.AttrStmt) and s.key == "virtual_thread":
        return project(s.body, k) if s.value == k else None
    if isinstance(s, ir.SeqStmt):
        parts = [p for p in (project(c, k) for c in s.stmts) if p is not None]
        return ir.seq(*parts) if parts else None
    if isinstance(s, (ir.For, ir.AttrStmt, ir.Allocate, ir.LetStmt)):
        body = project(s.body, k)
        if body is None:
            return None
        return dataclasses.replace(s, body=body)
    if isinstance(s, ir.IfThenElse):
        t = project(s.then_case, k)
        e = None if s.else_case is None else project(s.else_case, k)
        return None if t is None and e is None else ir.IfThenElse(
            s.cond, t if t is not None else ir.SeqStmt(()), e)
    return s


_IMM_CONTROL = {op.name for op in IMM_CONTROL}


def inplace_aliases(body: ir.Stmt) -> dict[str, str]:
    """Result buffer -> operand buffer of every ALU intrinsic written ``dst = op(lhs, ...)``
    with two buffers (as te stages are): the ALU updates in place, so the result takes
    the operand's SRAM entries.

    Raises:
        CodegenError: the operand is read elsewhere too (it would be overwritten).
    """
    alias: dict[str, str] = {}
    reads: dict[str, int] = {}  # ALU operands and DMA sources
    for s in walk_stmt(body):
        if isinstance(s, ir.Store):
            for x in walk_expr(s.value):
                if x.op is Op.LOAD:
                    reads[x.arg.name] = reads.get(x.arg.name, 0) + 1
        if not (isinstance(s, ir.AttrStmt) and s.key == "tensorize"
                and isinstance(s.value, str) and s.value.startswith(ALU_PREFIX)):
            continue
        for part in per_thread(s):
            ops = [x.value for x in walk_stmt(part) if isinstance(x, ir.Evaluate)]
            names = [o.src[0].arg.name if o.op is Op.CALL else None for o in ops]
            for n in names[1:]:
                if n is not None:
                    reads[n] = reads.get(n, 0) + 1
            in_place = s.value[len(ALU_PREFIX):] not in _IMM_CONTROL   # REQUANT: (dst, src, ctl)
            if in_place and len(ops) == 3 and names[0] and names[1] and names[0] != names[1]:
                alias[names[0]] = names[1]
    for dst, lhs in alias.items():
        if reads.get(lhs, 0) > 1:
            raise CodegenError(f"ALU result {dst!r} would overwrite {lhs!r} in place, but "
                               f"{lhs!r} is read elsewhere too; give it its own stage")
    return alias
