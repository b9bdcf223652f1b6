"""The ALU's semantics: one numpy reference for every model of the accelerator.

``alu_op(op, a, b, imm)`` is what an ALU uop computes for one int32 lane: ``a``
is ``acc[dst]``, ``b`` the immediate (sign-extended from ``config.ALU_IMM_BITS``)
or ``acc[src]``, ``imm`` the immediate field (read by REQUANT only). Every op
but REQUANT writes its value to ``acc[dst]``; REQUANT (``CLEARS_ACC``) writes it
to ``out[dst]`` only and zeros ``acc[dst]``. The functional and cycle simulators (through
``sim.machine``), the RTL tests (``tests/vta_hw/rtl/test_rtl_alu.py``, against
``rtl/alu.py``) and the compiler's ALU intrinsics (``compiler/topi/vta/intrin.py``,
whose op table is keyed by ``AluOp`` and checked against ``SEMANTICS``) read
it from here. All results wrap to int32:

======  ===================================================================
op      result
======  ===================================================================
MIN     ``min(a, b)`` (signed)
MAX     ``max(a, b)`` (signed)
ADD     ``a + b`` mod 2**32
SHR     ``b >= 0``: ``a >> min(b, 31)`` (arithmetic); ``b < 0``:
        ``a << min(-b, 31)`` mod 2**32 (VTA's shift, which shifts left for a
        negative amount)
MUL     the low 32 bits of ``a * b``
REQUANT ``clip((a + b mod 2**32) >> imm[4:0], lo, 127)`` (arithmetic shift),
        ``lo`` = 0 if ``imm[5]`` (relu) else -128, the int8 range of OUT
        (``OUT_WIDTH`` = 8 on every preset); ``imm[15:6]`` are ignored. The
        value goes to ``out[dst]``, and ``acc[dst]`` becomes 0, so the next tile
        accumulating into the same entries needs no GEMM reset. One uop does a
        conv's whole epilogue (bias, shift, relu, clip) in one pass instead of
        five (reset, ADD, SHR, MAX, MIN): requantize on the way out of the
        accumulator, as Gemmini's ``mvout`` scales and clips (Genc et al.,
        DAC 2021), here as an ALU op so the store path stays a plain DMA.
======  ===================================================================

The opcode field is ``config.ALU_OPCODE_BITS`` (3) wide, so the ISA holds at
most 8 ALU ops (``vta_hw.isa`` checks ``AluOp`` against it).
"""
from __future__ import annotations

import numpy as np

from vta_hw.isa import AluOp

#: REQUANT's immediate: bits [4:0] the right shift, bit 5 relu (module docstring).
REQUANT_SHIFT_BITS, REQUANT_RELU_BIT = 5, 5
#: REQUANT's clip bounds: the int8 range of an OUT value (``OUT_BITS`` wide, the
#: ``VTAConfig.OUT_WIDTH`` of every preset).
OUT_BITS, OUT_MIN, OUT_MAX = 8, -128, 127


def _wrap(x: np.ndarray) -> np.ndarray:
    """int64 -> the int32 value of its low 32 bits, as int64."""
    return (x & 0xFFFFFFFF).astype(np.uint32).view(np.int32).astype(np.int64)


def _requant(a, b, imm):
    shift = imm & ((1 << REQUANT_SHIFT_BITS) - 1)
    lo = 0 if (imm >> REQUANT_RELU_BIT) & 1 else OUT_MIN
    return np.clip(_wrap(a + b) >> shift, lo, OUT_MAX)


#: op -> its result on int64 arrays holding int32 values (and the int immediate field),
#: before the wrap to int32.
SEMANTICS = {
    AluOp.MIN: lambda a, b, imm: np.minimum(a, b),
    AluOp.MAX: lambda a, b, imm: np.maximum(a, b),
    AluOp.ADD: lambda a, b, imm: a + b,
    AluOp.SHR: lambda a, b, imm: np.where(b >= 0, a >> np.minimum(b, 31).clip(0),
                                          a << np.minimum(-b, 31).clip(0)),
    AluOp.MUL: lambda a, b, imm: a * b,
    AluOp.REQUANT: _requant,
}
assert set(SEMANTICS) == set(AluOp), "every AluOp needs its semantics here"
#: the ops whose value goes to OUT only, leaving 0 in ACC.
CLEARS_ACC = frozenset({AluOp.REQUANT})
#: the ops that read the immediate field as a control word besides ``b`` (so they take
#: a tensor operand and an immediate at once).
IMM_CONTROL = frozenset({AluOp.REQUANT})


def requant_imm(shift: int, relu: bool) -> int:
    """REQUANT's immediate for a right shift ``shift`` in [0, 31] and ``relu``.

    Raises:
        ValueError: ``shift`` outside [0, 31].
    """
    if not 0 <= shift < 1 << REQUANT_SHIFT_BITS:
        raise ValueError(f"REQUANT shift must be in [0, {(1 << REQUANT_SHIFT_BITS) - 1}], "
                         f"not {shift}")
    return shift | (int(bool(relu)) << REQUANT_RELU_BIT)


def alu_op(op: AluOp, a: np.ndarray, b, imm: int = 0) -> np.ndarray:
    """One ALU op's value on int32 values held in int64 arrays; returns int32 (wrapped).

    ``a``: int64 array of int32 values; ``b``: int64 scalar or array broadcastable to
    ``a``; ``imm``: the instruction's immediate field (signed 16-bit; REQUANT reads it).
    For ops in ``CLEARS_ACC`` the value is OUT's and ACC gets 0.
    """
    b = np.broadcast_to(np.asarray(b, np.int64), a.shape)
    r = SEMANTICS[AluOp(op)](a, b, int(imm))
    return (r & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def parse_alu_op(name) -> AluOp:
    """The ``AluOp`` named ``name`` ("MIN", "MAX", "ADD", "SHR", "MUL", "REQUANT"), or ``name`` itself
    if it is one.

    Raises:
        ValueError: no ALU op of that name; the message lists them.
    """
    if isinstance(name, AluOp):
        return name
    if isinstance(name, str) and name in AluOp.__members__:
        return AluOp[name]
    raise ValueError(f"ALU op must be one of {', '.join(AluOp.__members__)}, not {name!r}")
