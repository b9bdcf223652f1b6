"""The compiler's ALU intrinsic table agrees with the one ALU reference (``vta_hw.alu``)."""
import numpy as np
import pytest

from compiler.codegen.vta.eval import evaluate
from compiler.tir import ir
from compiler.topi.vta import alu, alu_intrin
from compiler.topi.vta.environment import Env
from compiler.topi.vta.intrin import TE_OPS
from vta_hw.alu import alu_op
from vta_hw.config import VTAConfig
from vta_hw.isa import AluOp

A = np.array([0, 1, -1, 7, -7, 1000, -1000, 2**20, -2**20, 2**31 - 1, -2**31], np.int64)


@pytest.mark.parametrize("op", list(AluOp), ids=lambda o: o.name)
@pytest.mark.parametrize("imm", [0, 1, 3, 31, -2, -127, 127])
def test_te_ops_match_the_reference(op, imm):
    assert set(TE_OPS) == set(AluOp)
    expr = TE_OPS[op](ir.var("a"), ir.const(imm, "int32"))
    got = np.asarray(evaluate(expr, {"a": A}), np.int64)
    got = (got & 0xFFFFFFFF).astype(np.uint32).view(np.int32)   # the ACC's int32 wrap
    assert got.tolist() == alu_op(op, A, imm).tolist()


def test_unknown_alu_op_is_a_value_error_naming_it():
    env = Env(VTAConfig())
    with pytest.raises(ValueError, match=r"ALU op must be one of MIN, MAX, ADD, SHR, MUL, "
                                         r"not 'SHL'"):
        alu_intrin(env, "SHL", 1)
    with pytest.raises(ValueError, match="not 'FOO'"):
        alu("FOO", None, imm=1)


def test_shr_needs_an_immediate():
    with pytest.raises(ValueError, match="give imm= for SHR"):
        alu_intrin(Env(VTAConfig()), "SHR")
