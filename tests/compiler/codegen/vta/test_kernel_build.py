"""compiler.build(..., target="vta") and driver.run_kernel: TVM-VTA's schedules, numpy in and out."""
import subprocess
import sys

import numpy as np
import pytest

import compiler
from compiler import te
from compiler.codegen.vta.eval import CodegenError
from compiler.codegen.vta.kernel import VtaKernel
from compiler.topi.vta import Env, pack_matrix, unpack_matrix
from driver import run_kernel
from driver.device import DeviceError
from vta_hw.isa import Load, MemId

env = Env.from_config("1x16_i8w8a32_15_15_18_17")


def matmul(o: int, n: int, m: int, transposed_input: bool = False):
    """VTA's Simple Matrix Multiply: A (o, n, B, BI), B (m, n, BO, BI), caches at ko."""
    A = te.placeholder((n, o, env.BATCH, env.BLOCK_IN) if transposed_input else
                       (o, n, env.BATCH, env.BLOCK_IN), env.inp_dtype, name="A")
    W = te.placeholder((m, n, env.BLOCK_OUT, env.BLOCK_IN), env.wgt_dtype, name="B")
    if transposed_input:
        A_buf = te.compute((o, n, env.BATCH, env.BLOCK_IN), lambda i, j, b, k: A[j, i, b, k],
                           name="A_buf")
    else:
        A_buf = te.compute(A.shape, lambda *i: A[i], name="A_buf")
    W_buf = te.compute(W.shape, lambda *i: W[i], name="B_buf")
    ko, ki = te.reduce_axis(n, name="ko"), te.reduce_axis(env.BLOCK_IN, name="ki")
    C_buf = te.compute((o, m, env.BATCH, env.BLOCK_OUT), lambda bo, co, bi, ci: te.sum(
        te.cast(A_buf[bo, ko, bi, ki], env.acc_dtype) * te.cast(W_buf[co, ko, ci, ki], env.acc_dtype),
        axis=[ko, ki]), name="C_buf")
    C = te.compute(C_buf.shape, lambda *i: te.cast(C_buf[i], env.inp_dtype), name="C")
    s = te.create_schedule(C)
    s[A_buf].set_scope(env.inp_scope)
    s[W_buf].set_scope(env.wgt_scope)
    s[C_buf].set_scope(env.acc_scope)
    bo, co, bi, ci = s[C_buf].op.axis
    s[C_buf].reorder(ko, bo, co, bi, ci, ki)
    if not transposed_input:        # else A_buf at the root: one copy of all of A, transposed
        s[A_buf].compute_at(s[C_buf], ko)
    s[W_buf].compute_at(s[C_buf], ko)
    s[A_buf].pragma(s[A_buf].op.axis[0], env.dma_copy)
    s[W_buf].pragma(s[W_buf].op.axis[0], env.dma_copy)
    s[C].pragma(s[C].op.axis[0], env.dma_copy)
    s[C_buf].tensorize(bi, env.gemm)
    return s, [A, W, C]


def operands(o, n, m, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, (o * env.BATCH, n * env.BLOCK_IN), dtype=np.int8)
    b = rng.integers(-128, 128, (m * env.BLOCK_OUT, n * env.BLOCK_IN), dtype=np.int8)
    want = (a.astype(np.int32) @ b.T.astype(np.int32)).astype(np.int8)
    return {"A": pack_matrix(a, env.BATCH, env.BLOCK_IN),
            "B": pack_matrix(b, env.BLOCK_OUT, env.BLOCK_IN)}, want


def test_simple_matmul_at_batch_1_builds_and_runs():
    """(a): the caches computed at the reduction loop with bo over [0, 0]; the offset
    (bo * 16) % 16 simplifies to 0 with bo's bounds."""
    s, args = matmul(1, 4, 4)
    k = compiler.build(s, args, target="vta", config=env.cfg, name="mm")
    assert isinstance(k, VtaKernel) and k.inputs == ["A", "B"] and k.outputs == ["C"]
    assert [(a.name, a.shape, a.dtype) for a in k.args] == [
        ("A", (1, 4, 1, 16), "int8"), ("B", (4, 4, 16, 16), "int8"), ("C", (1, 4, 1, 16), "int8")]
    ins, want = operands(1, 4, 4)
    r = run_kernel(k, ins)
    np.testing.assert_array_equal(unpack_matrix(r["C"]), want)
    assert r.cycles > 0 and 0 < r.gemm_utilization <= 1 and r.trace is None
    f = run_kernel(k, ins, device="fsim")       # values, no timing: None, not zeros
    np.testing.assert_array_equal(f["C"], r["C"])
    assert f.cycles is None and f.gemm_utilization is None and "not timed" in f.summary()
    t = run_kernel(k, ins, trace=True)
    assert t.cycles == r.cycles and t.trace.cycles == r.cycles


def test_a_strided_single_loop_copy_becomes_rows_of_one_element():
    """(b): 8 rows of A, one INP element of each per ko step: one LOAD of y_size 8,
    x_size 1, x_stride n."""
    o, n, m = 8, 4, 2
    s, args = matmul(o, n, m)
    k = compiler.build(s, args, target="vta", config=env.cfg)
    inp = [i for i in k.program.insns if isinstance(i, Load) and i.mem == MemId.INP]
    assert len(inp) == n and all((i.y_size, i.x_size, i.x_stride) == (o, 1, n) for i in inp)
    ins, want = operands(o, n, m, seed=1)
    np.testing.assert_array_equal(unpack_matrix(run_kernel(k, ins, device="fsim")["C"]), want)


def test_a_copy_the_load_cannot_express_names_the_loops_and_the_fix():
    s, args = matmul(4, 4, 2, transposed_input=True)
    with pytest.raises(CodegenError) as e:
        compiler.build(s, args, target="vta", config=env.cfg)
    msg = str(e.value)
    assert "'A'" in msg and "A_buf" in msg and "element loop 'j' steps [4]" in msg
    assert "reorder or split" in msg and "x_size 1" in msg


def test_build_vta_options_and_errors():
    s, args = matmul(1, 2, 2)
    k = compiler.build(s, args, target="vta", kinds={"B": "param"})
    assert k.inputs == ["A", "B"] and k.args[1].kind == "param"
    with pytest.raises(ValueError, match="kind of 'B' must be one of"):
        compiler.build(s, args, target="vta", kinds={"B": "weights"})
    with pytest.raises(ValueError, match="no parameter"):
        compiler.build(s, args, target="vta", kinds={"Z": "input"})
    with pytest.raises(TypeError, match="options of target='vta'"):
        compiler.build(s, args, target="llvm", config="1x16_i8w8a32_15_15_18_17")


def test_run_kernel_errors_name_the_argument():
    s, args = matmul(1, 2, 2)
    k = compiler.build(s, args, target="vta")
    ins, _ = operands(1, 2, 2)
    with pytest.raises(DeviceError, match="needs inputs B"):
        run_kernel(k, {"A": ins["A"]})
    with pytest.raises(DeviceError, match=r"input 'A' must be int8\[1, 2, 1, 16\].*pack_matrix"):
        run_kernel(k, {"A": ins["A"][0], "B": ins["B"]})
    with pytest.raises(DeviceError, match="no argument 'X'"):
        run_kernel(k, {**ins, "X": ins["A"]})
    with pytest.raises(DeviceError, match="is an output"):
        run_kernel(k, {**ins, "C": ins["A"]})
    with pytest.raises(DeviceError, match="trace=True needs device='tsim'"):
        run_kernel(k, ins, device="fsim", trace=True)


def test_the_compiler_imports_no_driver_or_simulator():
    code = ("import sys, compiler, compiler.build\n"
            "from compiler.codegen.vta.kernel import build_kernel\n"
            "bad = [m for m in sys.modules if m.split('.')[0] in ('driver', 'sim')]\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_env_carries_tvm_names():
    assert (env.BATCH, env.BLOCK_IN, env.BLOCK_OUT) == (1, 16, 16)
    assert (env.inp_dtype, env.wgt_dtype, env.acc_dtype) == ("int8", "int8", "int32")
    assert env.inp_scope == "local.inp_buffer" and env.acc_scope == "local.acc_buffer"
    assert env.dma_copy == "dma_copy" and env.uop_pragma == "uop_scope"
    assert env.gemm.name == "vta.gemm" and env.gemm is env.gemm
    assert env.alu == "alu"


def test_gemm_loops_fold_without_a_uop_pragma():
    """TVM folds the loops around a tensorized GEMM itself: without ``env.uop_pragma`` the
    (bo, co) loops of each reduction step are still one GEMM instruction, as with it."""
    ins, want = operands(4, 4, 4)
    counts = []
    for pragma in (False, True):
        s, args = matmul(4, 4, 4)
        if pragma:
            C_buf = args[2].op.reads()[0]
            s[C_buf].pragma(s[C_buf].op.axis[0], env.uop_pragma)
        k = compiler.build(s, args, target="vta", config=env.cfg)
        np.testing.assert_array_equal(unpack_matrix(run_kernel(k, ins, device="fsim")["C"]), want)
        counts.append(k.stats.insns)
    assert counts[0] == counts[1]
    assert counts[0]["GEMM"] == 1 + 4          # one reset, one update per reduction step

