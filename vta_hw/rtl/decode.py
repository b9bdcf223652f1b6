"""Instruction field slices for the RTL, taken from ``vta_hw.isa.layout``.

The RTL never hard-codes a bit position: every field comes from the same
table the encoder uses, so the layout changes with the preset in one place.
"""
from __future__ import annotations

from amaranth import Value

from vta_hw import isa
from vta_hw.config import VTAConfig


def field(word: Value, cfg: VTAConfig, opcode: isa.Opcode, name: str) -> Value:
    """Bits of field ``name`` of an ``opcode`` instruction held in ``word``.

    Raises:
        KeyError: ``opcode`` instructions have no field ``name``.
    """
    for f in isa.layout(opcode, cfg):
        if f.name == name:
            return word[f.lsb:f.lsb + f.width]
    raise KeyError(f"{opcode.name} instructions have no field {name!r}; fields: "
                   f"{', '.join(f.name for f in isa.layout(opcode, cfg))}")


def uop_field(word: Value, cfg: VTAConfig, name: str) -> Value:
    """Bits of uop field ``name`` ("dst", "src", "wgt") of a uop held in ``word``."""
    for f in isa.uop_layout(cfg):
        if f.name == name:
            return word[f.lsb:f.lsb + f.width]
    raise KeyError(f"uops have no field {name!r}")


def memop_fields(word: Value, cfg: VTAConfig) -> dict[str, Value]:
    """All LOAD/STORE fields of ``word`` by name (LOAD and STORE share a layout)."""
    return {f.name: word[f.lsb:f.lsb + f.width] for f in isa.layout(isa.Opcode.LOAD, cfg)}
