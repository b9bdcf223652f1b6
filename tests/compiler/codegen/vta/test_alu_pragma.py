"""The ALU pragma (``env.alu``, TVM-VTA's form): each ALU op from an elementwise stage's body,
bit-exact on both simulators against numpy; the pattern table against ``vta_hw.alu``; the
errors of a body or loops that do not match."""
import numpy as np
import pytest

import compiler
from compiler import te
from compiler.codegen.vta.alu_pragma import PATTERNS
from compiler.codegen.vta.eval import evaluate
from compiler.te import ScheduleError
from compiler.tir import ir
from compiler.topi.vta import Env
from driver import run_kernel
from vta_hw.alu import alu_op

X = np.array([0, 1, -1, 7, -7, 1000, -1000, 2**20, -2**20, 2**31 - 1, -2**31], np.int64)


@pytest.mark.parametrize("op", list(PATTERNS), ids=lambda o: o.name)
@pytest.mark.parametrize("c", [1, 2, 8, 256, -3, 127])
def test_each_pattern_computes_what_its_alu_op_does(op, c):
    alu, _, to_imm = PATTERNS[op]
    imm = to_imm(c)
    if imm is None:     # x // c for c no power of two has no ALU op
        assert op.name == "FLOORDIV"
        return
    got = np.asarray(evaluate(ir.binary(op, ir.var("x"), ir.const(c, "int32")), {"x": X}), np.int64)
    got = (got & 0xFFFFFFFF).astype(np.uint32).view(np.int32)   # the ACC's int32 wrap
    assert got.tolist() == alu_op(alu, X, imm).tolist()


def kernel(fn, env: Env, blocks: int = 3, split=None):
    """``C = int8(fn(A_buf, B_buf))`` with A_buf, B_buf DMA copies in ACC and the stage
    ``C_buf`` marked ``env.alu`` (TVM-VTA's "Get Started" vector add)."""
    shape = (1, blocks, env.BATCH, env.BLOCK_OUT)
    A = te.placeholder(shape, env.acc_dtype, name="A")
    B = te.placeholder(shape, env.acc_dtype, name="B")
    A_buf = te.compute(shape, lambda *i: A[i], name="A_buf")
    B_buf = te.compute(shape, lambda *i: B[i], name="B_buf")
    C_buf = te.compute(shape, lambda *i: fn(A_buf[i], B_buf[i]), name="C_buf")
    C = te.compute(shape, lambda *i: te.cast(C_buf[i], env.inp_dtype), name="C")
    s = te.create_schedule(C)
    copies = [t for t in (A_buf, B_buf) if t.op in s.stage_map]     # the operands fn reads
    for t in copies:
        s[t].set_scope(env.acc_scope)
        s[t].pragma(s[t].op.axis[0], env.dma_copy)
    s[C_buf].set_scope(env.acc_scope)
    s[C].pragma(s[C].op.axis[0], env.dma_copy)
    if split is not None:
        split(s, C_buf)
    s[C_buf].pragma(s[C_buf].op.axis[0], env.alu)
    args = [A] + [B] * (B_buf in copies) + [C]
    return compiler.build(s, args, target="vta", config=env.cfg, name="alu")


#: name -> (te body, numpy reference on int64 arrays, ALU instructions expected)
CASES = {
    "add_imm": (lambda a, b: a + 300, lambda a, b: a + 300, 1),
    "sub_imm": (lambda a, b: a - 77, lambda a, b: a - 77, 1),
    "add_tensor": (lambda a, b: a + b, lambda a, b: a + b, 1),
    "max_imm_relu": (lambda a, b: te.maximum(a, 0), lambda a, b: np.maximum(a, 0), 1),
    "max_imm_left": (lambda a, b: te.maximum(-5, a), lambda a, b: np.maximum(a, -5), 1),
    "max_tensor": (lambda a, b: te.maximum(a, b), np.maximum, 1),
    "min_imm": (lambda a, b: te.minimum(a, 100), lambda a, b: np.minimum(a, 100), 1),
    "min_tensor": (lambda a, b: te.minimum(a, b), np.minimum, 1),
    "shr": (lambda a, b: a >> 3, lambda a, b: a >> 3, 1),
    "floordiv_pow2": (lambda a, b: a // 16, lambda a, b: a >> 4, 1),
    "shl": (lambda a, b: a << 2, lambda a, b: a << 2, 1),
    "mul_imm": (lambda a, b: a * -3, lambda a, b: a * -3, 1),
    "mul_tensor": (lambda a, b: a * b, lambda a, b: a * b, 1),
    "copy": (lambda a, b: a, lambda a, b: a, 1),
    "clip": (lambda a, b: te.minimum(te.maximum(a, -20), 20),
             lambda a, b: np.clip(a, -20, 20), 2),
    "add_shr_relu": (lambda a, b: te.maximum((a + b) >> 2, 0),
                     lambda a, b: np.maximum((a + b) >> 2, 0), 3),
}


@pytest.mark.parametrize("preset", ["1x16_i8w8a32_15_15_18_17", "2x16_i8w8a32_15_15_18_18"])
@pytest.mark.parametrize("name", list(CASES))
def test_alu_pragma_is_bit_exact_on_both_simulators(name, preset):
    fn, ref, n_alu = CASES[name]
    env = Env.from_config(preset)
    k = kernel(fn, env)
    assert k.stats.insns["ALU"] == n_alu        # the three blocks fold into each instruction
    rng = np.random.default_rng(len(name))
    shape = (1, 3, env.BATCH, env.BLOCK_OUT)
    a = rng.integers(-3000, 3000, shape, dtype=np.int32)
    b = rng.integers(-3000, 3000, shape, dtype=np.int32)
    want = ref(a.astype(np.int64), b.astype(np.int64)).astype(np.int32).astype(np.int8)
    inputs = {n: v for n, v in (("A", a), ("B", b)) if n in k.inputs}
    for device in ("fsim", "tsim"):
        got = run_kernel(k, inputs, device=device)["C"]
        np.testing.assert_array_equal(got, want, err_msg=f"{name} on {device}")


def test_a_body_without_an_alu_op_names_the_stage_expression_and_forms():
    env = Env.from_config("1x16_i8w8a32_15_15_18_17")
    with pytest.raises(ScheduleError) as e:
        kernel(lambda a, b: a - b, env)
    msg = str(e.value)
    assert "stage 'C_buf'" in msg and "(A_buf[" in msg and " - B_buf[" in msg
    assert "needs a constant right operand" in msg and "supports x + c" in msg
    with pytest.raises(ScheduleError, match=r"divides by 3, not a power of two.*supports"):
        kernel(lambda a, b: a // 3, env)
    with pytest.raises(ScheduleError, match=r"immediate 40000 .* does not fit the signed 16-bit"):
        kernel(lambda a, b: a + 40000, env)


def test_loops_that_split_an_element_name_the_stage_loops_and_fix():
    env = Env.from_config("1x16_i8w8a32_15_15_18_17")

    def split_lanes(s, C_buf):
        s[C_buf].split(s[C_buf].op.axis[3], factor=4)
        s[C_buf].reorder(s[C_buf].leaf_iter_vars[3], s[C_buf].leaf_iter_vars[0],
                         s[C_buf].leaf_iter_vars[1], s[C_buf].leaf_iter_vars[2],
                         s[C_buf].leaf_iter_vars[4])

    with pytest.raises(ScheduleError) as e:
        kernel(lambda a, b: a + 1, env, split=split_lanes)
    msg = str(e.value)
    assert "stage 'C_buf'" in msg and "keep the stage's last two axes" in msg
    assert "'i3.inner'" in msg or "'i3.outer'" in msg


def test_a_shift_by_a_variable_is_refused_when_built():
    with pytest.raises(ValueError, match=r"shift amount of `>>` must be a constant int in \[0, 31\]"):
        ir.var("x") >> ir.var("n")
