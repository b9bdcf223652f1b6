"""Tensor intrinsics: a declared computation that a hardware instruction implements.

An intrinsic is a compute over placeholders (what it calculates, with shapes),
a `Layout` per operand that needs one (memory scope, offset alignment), and a function
that, given `BufferView`s of the operands bound at the tensorized loop, returns
the statements implementing it: `body` (the whole computation), `reset` (zero
the accumulator) and `update` (accumulate), as VTA's GEMM intrinsic does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..tir import ir
from ..tir.ops import Op
from .tensor import ComputeOp, Tensor


@dataclass(frozen=True)
class BufferView:
    """The part of `buffer` an intrinsic operand covers: `shape` elements from `start`."""

    buffer: ir.Buffer
    start: tuple[ir.Expr, ...]
    shape: tuple[int, ...]

    def _index(self, idx) -> tuple[ir.Expr, ...]:
        idx = tuple(ir.convert(i) for i in idx)
        if len(idx) != len(self.shape):
            raise IndexError(f"view of {self.buffer.name!r} has shape {self.shape}; "
                             f"indexed with {len(idx)} indices")
        lead = len(self.start) - len(idx)
        return self.start[:lead] + tuple(s + i for s, i in zip(self.start[lead:], idx))

    def vload(self, *idx) -> ir.Expr:
        """Load the element at `idx` of the view (indices within `shape`)."""
        return ir.load(self.buffer, self._index(idx))

    def vstore(self, idx, value) -> ir.Store:
        return ir.Store(self.buffer, ir.convert(value, self.buffer.dtype), self._index(idx))

    @property
    def elem_offset(self) -> ir.Expr:
        """The flat element offset of the view's first element in its buffer."""
        return flat_offset(self.buffer, self.start)

    def access_ptr(self) -> ir.Expr:
        """The address of the view's first element (a "handle")."""
        return ir.Expr(Op.CALL, "handle", (ir.load(self.buffer, self.start),), "address_of")


def flat_offset(buffer: ir.Buffer, start) -> ir.Expr:
    out = ir.const(0)
    for i, stride in zip(start, buffer.strides):
        out = out + i * stride
    return out


@dataclass(frozen=True)
class Layout:
    """Where an intrinsic operand must be: memory `scope` (None: any) and `offset_factor`, a
    number of elements that its first element's flat offset must be a multiple of (SRAM
    rows, vector alignment)."""

    scope: str | None = None
    offset_factor: int = 1


Impl = Callable[[list[BufferView], list[BufferView]], "tuple[ir.Stmt, ir.Stmt, ir.Stmt] | ir.Stmt"]


@dataclass(eq=False)
class TensorIntrin:
    """`compute`: the intrinsic's computation (a te compute over placeholders);
    `impl(ins, outs)`: its statements, either one Stmt (no reduction split) or
    (body, reset, update); `layouts`: a Layout per operand name (placeholder names
    and the compute's name) that needs one."""

    name: str
    compute: Tensor
    impl: Impl
    layouts: dict

    @property
    def op(self) -> ComputeOp:
        return self.compute.op

    @property
    def inputs(self) -> list[Tensor]:
        return self.op.reads()

    def statements(self, ins: list[BufferView], outs: list[BufferView]):
        """(body, reset, update); reset and update are None for a single-statement impl."""
        out = self.impl(ins, outs)
        return (out, None, None) if not isinstance(out, tuple) else out


def decl_tensor_intrin(compute: Tensor, impl: Impl, name: str,
                       layouts: dict[str, Layout] | None = None) -> TensorIntrin:
    """Declare a tensor intrinsic (see module docstring).

    Raises ValueError when `compute` is not a te.compute or a layout names no operand.
    """
    if not isinstance(compute.op, ComputeOp):
        raise ValueError(f"tensor intrinsic {name!r}: compute must be a te.compute tensor, not "
                         f"{compute!r}")
    layouts = dict(layouts or {})
    operands = [t.name for t in compute.op.reads()] + [compute.name]
    unknown = [k for k in layouts if k not in operands]
    if unknown:
        raise ValueError(f"tensor intrinsic {name!r}: layout for {unknown[0]!r}, which is not an "
                         f"operand (operands: {', '.join(operands)})")
    return TensorIntrin(name, compute, impl, layouts)
