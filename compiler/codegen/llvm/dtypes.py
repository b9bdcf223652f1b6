"""Scalar dtypes of the loop IR and their LLVM types.

Two views of each dtype:

* register type (what arithmetic works on): ``bool`` is ``i1``, ``float16``
  is ``half``; the rest map one to one (``int8`` -> ``i8``, ``float32`` ->
  ``float``). Signedness lives in the operations (sdiv/udiv, sext/zext), not
  in LLVM's integer types.
* storage type (what a buffer element occupies in memory): as the register
  type except ``bool``, stored as one byte (``i8``, 0 or 1) to match numpy.

float16 is a storage format: loads extend to ``half`` values and LLVM
promotes arithmetic on them to ``float`` where the CPU has no half ALU (x86
F16C converts in hardware); schedules that want float32 accumulation cast
explicitly.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from llvmlite import ir

_FLOATS = {16: ir.HalfType, 32: ir.FloatType, 64: ir.DoubleType}


@dataclass(frozen=True)
class ScalarType:
    """A parsed scalar dtype: kind is ``"float"``, ``"int"``, ``"uint"`` or ``"bool"``."""

    kind: str
    bits: int

    @property
    def name(self) -> str:
        return "bool" if self.kind == "bool" else f"{self.kind}{self.bits}"

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_signed(self) -> bool:
        """True for int* (signed arithmetic, sign extension); float also counts as signed."""
        return self.kind in ("int", "float")

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def nbytes(self) -> int:
        """Bytes one element occupies in a buffer."""
        return 1 if self.kind == "bool" else self.bits // 8

    def reg(self) -> ir.Type:
        """LLVM register type."""
        if self.kind == "float":
            return _FLOATS[self.bits]()
        return ir.IntType(1 if self.kind == "bool" else self.bits)

    def mem(self) -> ir.Type:
        """LLVM storage type (bool is i8)."""
        return ir.IntType(8) if self.kind == "bool" else self.reg()


@functools.cache
def scalar_type(dtype) -> ScalarType:
    """Parse a dtype (``"float32"``, ``"int8"``, ``"bool"``, a numpy dtype, or
    any object whose ``str()`` is such a name; a ``"x<lanes>"`` suffix such as
    ``"float32x8"`` is ignored here).

    Raises:
        ValueError: not one of bool, int8/16/32/64, uint8/16/32/64,
            float16/32/64.
    """
    name = str(dtype)
    if "x" in name:
        name = name.split("x")[0]
    if name in ("bool", "uint1", "int1"):
        return ScalarType("bool", 1)
    for kind in ("float", "uint", "int"):
        if name.startswith(kind):
            digits = name[len(kind):]
            if digits.isdigit():
                bits = int(digits)
                ok = bits in _FLOATS if kind == "float" else bits in (8, 16, 32, 64)
                if ok:
                    return ScalarType(kind, bits)
    raise ValueError(f"dtype must be bool, int8..int64, uint8..uint64 or float16/32/64 for the "
                     f"LLVM backend, not {dtype!r}")


def vec(ty: ir.Type, lanes: int) -> ir.Type:
    """``ty`` itself for one lane, else ``<lanes x ty>``."""
    return ty if lanes == 1 else ir.VectorType(ty, lanes)
