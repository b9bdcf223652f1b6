"""Tensor intrinsics: a declared computation that a hardware instruction implements.

An intrinsic is a compute over placeholders (what it calculates, with shapes),
required memory scopes for its operands (the buffer layouts), and a function
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

    def access_ptr(self) -> ir.Expr:
        """The address of the view's first element (a "handle")."""
        return ir.Expr(Op.CALL, "handle", (ir.load(self.buffer, self.start),), "address_of")


Impl = Callable[[list[BufferView], list[BufferView]], "tuple[ir.Stmt, ir.Stmt, ir.Stmt] | ir.Stmt"]


@dataclass(eq=False)
class TensorIntrin:
    """`compute`: the intrinsic's computation (a te compute over placeholders);
    `impl(ins, outs)`: its statements, either one Stmt (no reduction split) or
    (body, reset, update); `scopes`: required scope per operand name (missing: any)."""

    name: str
    compute: Tensor
    impl: Impl
    scopes: dict

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


def decl_tensor_intrin(compute: Tensor, impl: Impl, name: str, scopes: dict | None = None) -> TensorIntrin:
    """Declare a tensor intrinsic (see module docstring)."""
    if not isinstance(compute.op, ComputeOp):
        raise ValueError(f"tensor intrinsic {name!r}: compute must be a te.compute tensor, not "
                         f"{compute!r}")
    return TensorIntrin(name, compute, impl, dict(scopes or {}))
