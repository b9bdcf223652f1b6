"""Vector values for vectorised loops: ramps, broadcasts, lane-wise memory.

Inside a vectorised loop ``for v in [m, m + L) vectorized`` the loop
variable is the ramp ``(m, m+1, ..., m+L-1)``. Index arithmetic keeps ramps
symbolic (:class:`Ramp`: a scalar base, a constant stride, a lane count), so
``A[i*N + v]`` is recognised as one contiguous vector load and ``A[v*N]`` as
a strided gather; anything non-affine becomes an LLVM vector value.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

I32 = ir.IntType(32)


@dataclass(frozen=True)
class Ramp:
    """``base + stride * (0, 1, ..., lanes-1)`` with ``base`` an LLVM integer scalar."""

    base: ir.Value
    stride: int
    lanes: int


def lanes_of(value) -> int:
    """1 for scalars, the lane count for vectors and :class:`Ramp` values."""
    if isinstance(value, Ramp):
        return value.lanes
    return value.type.count if isinstance(value.type, ir.VectorType) else 1


def broadcast(builder: ir.IRBuilder, value: ir.Value, lanes: int) -> ir.Value:
    """Splat scalar ``value`` to ``lanes`` lanes (identity when ``lanes`` is 1 or already vector)."""
    if lanes == 1 or isinstance(value.type, ir.VectorType):
        return value
    vty = ir.VectorType(value.type, lanes)
    if isinstance(value, ir.Constant):
        return ir.Constant(vty, [value.constant] * lanes)
    one = builder.insert_element(ir.Constant(vty, ir.Undefined), value, ir.Constant(I32, 0))
    mask = ir.Constant(ir.VectorType(I32, lanes), [0] * lanes)
    return builder.shuffle_vector(one, ir.Constant(vty, ir.Undefined), mask)


def materialize(builder: ir.IRBuilder, value) -> ir.Value:
    """An LLVM value for ``value``; a :class:`Ramp` becomes ``splat(base) + <0, s, 2s, ...>``."""
    if not isinstance(value, Ramp):
        return value
    ty = value.base.type
    steps = ir.Constant(ir.VectorType(ty, value.lanes), [value.stride * i for i in range(value.lanes)])
    return builder.add(broadcast(builder, value.base, value.lanes), steps)


def extract_lanes(builder: ir.IRBuilder, value, lanes: int) -> "list[ir.Value]":
    """Per-lane scalars of ``value`` (scalars repeat; ramps give base + stride*i)."""
    if isinstance(value, Ramp):
        return [builder.add(value.base, ir.Constant(value.base.type, value.stride * i))
                if i else value.base for i in range(lanes)]
    if not isinstance(value.type, ir.VectorType):
        return [value] * lanes
    return [builder.extract_element(value, ir.Constant(I32, i)) for i in range(lanes)]


def pack_lanes(builder: ir.IRBuilder, scalars: "list[ir.Value]") -> ir.Value:
    """A vector whose lanes are ``scalars`` (all of one type)."""
    vty = ir.VectorType(scalars[0].type, len(scalars))
    out = ir.Constant(vty, ir.Undefined)
    for i, s in enumerate(scalars):
        out = builder.insert_element(out, s, ir.Constant(I32, i))
    return out
