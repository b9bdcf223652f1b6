"""The one ALU reference (``vta_hw.alu``): its op table, names, and the field that caps it."""
import numpy as np
import pytest

from vta_hw import alu
from vta_hw.config import ALU_OPCODE_BITS, VTAConfig
from vta_hw.isa import AluOp, Opcode, layout


def test_every_op_has_semantics_and_fits_the_opcode_field():
    assert set(alu.SEMANTICS) == set(AluOp)
    width = {f.name: f.width for f in layout(Opcode.ALU, VTAConfig())}["alu_op"]
    assert width == ALU_OPCODE_BITS and max(AluOp) < 2 ** width


@pytest.mark.parametrize("name", ["MIN", "MAX", "ADD", "SHR", "MUL"])
def test_parse_alu_op_by_name(name):
    assert alu.parse_alu_op(name) is AluOp[name]
    assert alu.parse_alu_op(AluOp[name]) is AluOp[name]


@pytest.mark.parametrize("bad", ["SHL", "add", 3, None])
def test_parse_alu_op_names_the_bad_value_and_the_choices(bad):
    with pytest.raises(ValueError) as e:
        alu.parse_alu_op(bad)
    assert str(e.value) == f"ALU op must be one of MIN, MAX, ADD, SHR, MUL, REQUANT, not {bad!r}"


def test_alu_op_wraps_to_int32():
    got = alu.alu_op(AluOp.ADD, np.array([2**31 - 1], np.int64), 1)
    assert got.dtype == np.int32 and got.tolist() == [-2**31]


@pytest.mark.parametrize("a, b, imm, want", [
    (1000, 5, 3, 125),                  # (1000 + 5) >> 3 = 125
    (1000, 50, 3, 127),                 # 131 clips to 127
    (-1000, -50, 3, -128),              # -132 clips to -128
    (-1000, -50, 3 | 32, 0),            # relu: clips at 0
    (2**31 - 1, 1, 0, -128),            # the sum wraps to -2**31 first
    (-7, 0, 1, -4),                     # arithmetic shift rounds toward -inf
    (77, 0, 0x7FC0 | 2, 19),            # imm[15:6] are ignored
])
def test_requant_is_a_shifted_clipped_sum(a, b, imm, want):
    assert alu.alu_op(AluOp.REQUANT, np.array([a], np.int64), b, imm).tolist() == [want]


def test_requant_imm_packs_shift_and_relu_and_refuses_a_bad_shift():
    assert alu.requant_imm(6, True) == 6 | 32 and alu.requant_imm(31, False) == 31
    with pytest.raises(ValueError, match=r"REQUANT shift must be in \[0, 31\], not 32"):
        alu.requant_imm(32, False)
