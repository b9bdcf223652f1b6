"""Counted loops in LLVM IR: ``for (i = lo; i < hi; ++i) body(i)``.

The loop is emitted in the canonical form LLVM's loop passes expect (a
header with one induction phi, a body, a latch that increments, an exit),
so LICM, the vectoriser and unrolling recognise it.
"""
from __future__ import annotations

from typing import Callable

from llvmlite import ir


def counted_loop(builder: ir.IRBuilder, lo: ir.Value, hi: ir.Value, name: str,
                 body: Callable[[ir.Value], None]) -> None:
    """Emit ``for i in [lo, hi): body(i)`` at the builder's position.

    Args:
        builder: positioned where the loop goes; left at the loop's exit.
        lo, hi: integer values of the same type (the induction type).
        name: a prefix for block names (readability of the IR only).
        body: called once with the induction variable to emit the body; it
            may create blocks, and must leave the builder in an open block.
    """
    pre = builder.block
    header = builder.append_basic_block(f"{name}.header")
    loop_body = builder.append_basic_block(f"{name}.body")
    exit_block = builder.append_basic_block(f"{name}.exit")
    builder.branch(header)
    builder.position_at_end(header)
    iv = builder.phi(lo.type, name=name)
    iv.add_incoming(lo, pre)
    builder.cbranch(builder.icmp_signed("<", iv, hi), loop_body, exit_block)
    builder.position_at_end(loop_body)
    body(iv)
    nxt = builder.add(iv, ir.Constant(lo.type, 1), name=f"{name}.next", flags=["nsw"])
    iv.add_incoming(nxt, builder.block)
    builder.branch(header)
    builder.position_at_end(exit_block)
