"""The ALU's semantics: one numpy reference for every model of the accelerator.

``alu_op(op, a, b)`` is what an ALU uop does to one int32 lane: ``a`` is
``acc[dst]``, ``b`` the immediate (sign-extended from ``config.ALU_IMM_BITS``)
or ``acc[src]``. The functional and cycle simulators (through
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
======  ===================================================================

The opcode field is ``config.ALU_OPCODE_BITS`` (3) wide, so the ISA holds at
most 8 ALU ops (``vta_hw.isa`` checks ``AluOp`` against it).
"""
from __future__ import annotations

import numpy as np

from vta_hw.isa import AluOp

#: op -> its result on int64 arrays holding int32 values, before the wrap to int32.
SEMANTICS = {
    AluOp.MIN: np.minimum,
    AluOp.MAX: np.maximum,
    AluOp.ADD: np.add,
    AluOp.SHR: lambda a, b: np.where(b >= 0, a >> np.minimum(b, 31).clip(0),
                                     a << np.minimum(-b, 31).clip(0)),
    AluOp.MUL: np.multiply,
}
assert set(SEMANTICS) == set(AluOp), "every AluOp needs its semantics here"


def alu_op(op: AluOp, a: np.ndarray, b) -> np.ndarray:
    """One ALU op on int32 values held in int64 arrays; returns int32 (wrapped).

    ``a``: int64 array of int32 values; ``b``: int64 scalar or array broadcastable to ``a``.
    """
    b = np.broadcast_to(np.asarray(b, np.int64), a.shape)
    r = SEMANTICS[AluOp(op)](a, b)
    return (r & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def parse_alu_op(name) -> AluOp:
    """The ``AluOp`` named ``name`` ("MIN", "MAX", "ADD", "SHR", "MUL"), or ``name`` itself
    if it is one.

    Raises:
        ValueError: no ALU op of that name; the message lists them.
    """
    if isinstance(name, AluOp):
        return name
    if isinstance(name, str) and name in AluOp.__members__:
        return AluOp[name]
    raise ValueError(f"ALU op must be one of {', '.join(AluOp.__members__)}, not {name!r}")
