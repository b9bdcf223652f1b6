"""Every schedule error, from te's primitives to the VTA code generator, names the stage, the
loop (axis) and what to change: one representative of each kind, the three parts checked."""
import pytest

import compiler
from compiler import te
from compiler.codegen.vta.eval import CodegenError
from compiler.te import ScheduleError
from compiler.topi.vta import Env

env = Env.from_config("1x16_i8w8a32_15_15_18_17")


def chain():
    A = te.placeholder((8, 8), name="A")
    B = te.compute((8, 8), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((8, 8), lambda i, j: B[i, j] * 2.0, name="C")
    return A, B, C


def split_zero():
    A, B, C = chain()
    te.create_schedule(C)[C].split(C.op.axis[0], factor=0)


def fuse_apart():
    A, B, C = chain()
    D = te.compute((8, 8, 8), lambda i, j, m: B[i, j] + C[j, m], name="D")
    s = te.create_schedule(D)
    s[D].fuse(D.op.axis[0], D.op.axis[2])


def compute_at_no_reader():
    A, B, C = chain()
    D = te.compute((8, 8), lambda i, j: A[i, j] * 3.0, name="D")
    s = te.create_schedule([C, D])
    s[B].compute_at(s[D], D.op.axis[0])


def compute_at_split_after():
    A, B, C = chain()
    s = te.create_schedule(C)
    s[B].compute_at(s[C], C.op.axis[0])
    s[C].split(C.op.axis[0], factor=2)
    compiler.tir.lower(s, [A, C])


def parallel_reduce():
    A = te.placeholder((8, 8), name="A")
    k = te.reduce_axis(8, "k")
    S = te.compute((8,), lambda i: te.sum(A[i, k], axis=k), name="S")
    te.create_schedule(S)[S].parallel(k)


def inline_reduction():
    A = te.placeholder((8, 8), name="A")
    k = te.reduce_axis(8, "k")
    S = te.compute((8,), lambda i: te.sum(A[i, k], axis=k), name="S")
    T = te.compute((8,), lambda i: S[i] * 2.0, name="T")
    te.create_schedule(T)[S].compute_inline()


def matmul(alu_body=None, dma_out=True, gemm_axis="bi", inp_scope=env.inp_scope, m=4,
           env=env):
    """TVM-VTA's matrix multiply (1 x 4 blocks . m x 4 blocks), with the mistakes the cases
    below make."""
    o, n = 1, 4
    A = te.placeholder((o, n, env.BATCH, env.BLOCK_IN), env.inp_dtype, name="A")
    W = te.placeholder((m, n, env.BLOCK_OUT, env.BLOCK_IN), env.wgt_dtype, name="W")
    A_buf = te.compute(A.shape, lambda *i: A[i], name="A_buf")
    W_buf = te.compute(W.shape, lambda *i: W[i], name="W_buf")
    ko, ki = te.reduce_axis(n, "ko"), te.reduce_axis(env.BLOCK_IN, "ki")
    C_buf = te.compute((o, m, env.BATCH, env.BLOCK_OUT), lambda bo, co, bi, ci: te.sum(
        te.cast(A_buf[bo, ko, bi, ki], "int32") * te.cast(W_buf[co, ko, ci, ki], "int32"),
        axis=[ko, ki]), name="C_buf")
    last = C_buf
    if alu_body is not None:
        last = te.compute(C_buf.shape, lambda *i: alu_body(C_buf[i]), name="C_alu")
    C = te.compute(C_buf.shape, lambda *i: te.cast(last[i], "int8"), name="C")
    s = te.create_schedule(C)
    s[A_buf].set_scope(inp_scope)
    s[W_buf].set_scope(env.wgt_scope)
    s[C_buf].set_scope(env.acc_scope)
    bo, co, bi, ci = s[C_buf].op.axis
    s[C_buf].reorder(ko, bo, co, bi, ci, ki)
    s[A_buf].compute_at(s[C_buf], ko)
    s[W_buf].compute_at(s[C_buf], ko)
    for t in (A_buf, W_buf) + ((C,) if dma_out else ()):
        s[t].pragma(s[t].op.axis[0], env.dma_copy)
    s[C_buf].tensorize({"bi": bi, "co": co}[gemm_axis], env.gemm)
    if alu_body is not None:
        s[last].set_scope(env.acc_scope)
        s[last].pragma(s[last].op.axis[0], env.alu)
    compiler.build(s, [A, W, C], target="vta", config=env.cfg)


def transposed_copy():
    At = te.placeholder((4, 2, env.BATCH, env.BLOCK_IN), env.inp_dtype, name="At")
    W = te.placeholder((4, 4, env.BLOCK_OUT, env.BLOCK_IN), env.wgt_dtype, name="W")
    A_t = te.compute((2, 4, env.BATCH, env.BLOCK_IN), lambda i, j, p, q: At[j, i, p, q], name="A_t")
    W_buf = te.compute(W.shape, lambda *i: W[i], name="W_buf")
    ko, ki = te.reduce_axis(4, "ko"), te.reduce_axis(env.BLOCK_IN, "ki")
    D_buf = te.compute((2, 4, env.BATCH, env.BLOCK_OUT), lambda bo, co, bi, ci: te.sum(
        te.cast(A_t[bo, ko, bi, ki], "int32") * te.cast(W_buf[co, ko, ci, ki], "int32"),
        axis=[ko, ki]), name="D_buf")
    D = te.compute(D_buf.shape, lambda *i: te.cast(D_buf[i], "int8"), name="D")
    s = te.create_schedule(D)
    for t, scope in ((A_t, env.inp_scope), (W_buf, env.wgt_scope), (D_buf, env.acc_scope)):
        s[t].set_scope(scope)
    s[D_buf].reorder(ko, *s[D_buf].op.axis, ki)
    s[W_buf].compute_at(s[D_buf], ko)
    for t in (A_t, W_buf, D):
        s[t].pragma(s[t].op.axis[0], env.dma_copy)
    s[D_buf].tensorize(s[D_buf].op.axis[2], env.gemm)
    compiler.build(s, [At, W, D], target="vta")


#: (case, error class, the stage, the loop, the fix: each must appear in the message)
CASES = [
    (split_zero, ScheduleError, "stage 'C'", "'i'", "must be a positive int"),
    (fuse_apart, ScheduleError, "stage 'D'", "i, m", "reorder them first"),
    (compute_at_no_reader, ScheduleError, "'B'", "axis 'i'", "attach 'B' to a stage that reads it"),
    (compute_at_split_after, ScheduleError, "stage 'B'", "axis 'i'", "attach it to one of the new"),
    (parallel_reduce, ScheduleError, "stage 'S'", "axis 'k'", "parallelize a data-parallel axis"),
    (inline_reduction, ScheduleError, "stage 'S'", "axes k", "use compute_at"),
    (lambda: matmul(gemm_axis="co"), ScheduleError, "stage 'C_buf'", "axis 'co'",
     "split the loops so the inner ones match"),
    (lambda: matmul(inp_scope="global"), ScheduleError, "stage 'C_buf'", "axis 'bi'",
     "cache it into 'local.inp_buffer'"),
    (lambda: matmul(alu_body=lambda x: x // 3), ScheduleError, "stage 'C_alu'", "'i3_2'",
     "Write the stage in those forms"),
    (lambda: matmul(dma_out=False), CodegenError, "stage 'C'", "'i3_2'",
     "mark a copy stage with pragma env.dma_copy"),
    (lambda: matmul(m=20, env=Env.from_config("1x4_i8w8a32_8_8_8_9_bus32")), CodegenError,
     "stage 'W_buf'", "'ko'", "use smaller tiles"),
    (transposed_copy, CodegenError, "'A_t'", "loop 'j'", "reorder or split the copy's loops"),
]


@pytest.mark.parametrize("case,error,stage,loop,fix", CASES,
                         ids=[c[0].__name__ if c[0].__name__ != "<lambda>" else f"vta{i}"
                              for i, c in enumerate(CASES)])
def test_error_names_stage_loop_and_fix(case, error, stage, loop, fix):
    with pytest.raises(error) as e:
        case()
    msg = str(e.value)
    for part in (stage, loop, fix):
        assert part in msg, f"{part!r} missing from: {msg}"
