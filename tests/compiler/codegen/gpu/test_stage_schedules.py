"""GPU stage schedules from te primitives (topi.gpu.stage) and the one-source module printer."""

import numpy as np
import pytest

from compiler import te, tir
from compiler.codegen.gpu import c_source, cuda, opencl
from compiler.tir.passes.gpu_barriers import insert_barriers
from compiler.topi import gpu
from compiler.topi.gpu import stage

from tests.gpu_marks import needs_opencl


def dense_group(m=8, n=16, k=64):
    """out = relu(sum_k x[i, k] * w[j, k] + 1): a reduction under an elementwise epilogue."""
    x = te.placeholder((m, k), "float32", "x")
    w = te.placeholder((n, k), "float32", "w")
    r = te.reduce_axis(k, "r")
    acc = te.compute((m, n), lambda i, j: te.sum(x[i, r] * w[j, r], axis=r), name="acc")
    out = te.compute((m, n), lambda i, j: te.maximum(acc[i, j] + 1.0, 0.0), name="out")
    return x, w, acc, out


def test_split_stage_inlines_elementwise_and_clones_the_reduction():
    x, w, acc, out = dense_group()
    mid = te.compute(out.shape, lambda i, j: out[i, j] * 2.0, name="mid")
    new, reds = stage.split_stage(mid, {})
    assert [r.name for r in reds] == ["acc"] and reds[0] is not acc
    assert [t.name for t in new.op.reads()] == ["acc"]       # `out` was inlined


def test_schedule_keeps_the_accumulator_in_registers():
    x, w, acc, out = dense_group()
    new, reds = stage.split_stage(out, {})
    f = tir.lower(stage.schedule_stage(new, reds), [x, w, new], "k")
    src = cuda.print_kernel(f)
    assert "float acc[1];" in src.code and src.launch.block == (64, 1, 1)   # small: 64-thread blocks


def test_split_k_factor_needs_parallelism_and_long_chains():
    x, w, acc, out = dense_group(8, 16, 64)
    assert stage.split_k_factor(acc, min_threads=1024, min_chunk=8) == 8
    assert stage.split_k_factor(acc, min_threads=1024, min_chunk=32) == 2
    assert stage.split_k_factor(acc, min_threads=16) == 1


@needs_opencl
def test_split_k_partial_and_total_match_numpy():
    x, w, acc, out = dense_group(8, 16, 64)
    new, (acc2,) = stage.split_stage(out, {})
    partial, total = stage.split_k(acc2, 4)
    ph = te.placeholder(partial.shape, partial.dtype, "part")
    total = stage.replace_reads(total, partial, ph)
    new = stage.replace_reads(new, acc2, total)
    f1 = tir.lower(stage.schedule_partial(partial, tile=4), [x, w, partial], "part_k")
    f2 = tir.lower(stage.schedule_stage(new, [total]), [ph, new], "out_k")
    assert "part_local[4]" in opencl.print_kernel(f1).code
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((8, 64)).astype("float32"), rng.standard_normal((16, 64)).astype("float32")
    p = np.zeros((4, 8, 16), "float32")
    y = np.zeros((8, 16), "float32")
    opencl.build(f1)(a, b, p)
    opencl.build(f2)(p, y)
    np.testing.assert_allclose(y, np.maximum(a @ b.T + 1, 0), rtol=1e-5, atol=1e-5)


def test_verify_accepts_barriers():
    f = insert_barriers(gpu.softmax_rows(4, 256))
    tir.verify(f, True)


def test_print_module_shares_prelude_and_helpers():
    fs = [gpu.add_relu(1024), gpu.sigmoid_mul(1000), gpu.softmax_rows(4, 100)]
    code, kernels = c_source.print_module(cuda.CUDAPrinter, fs)
    assert [k.name for k in kernels] == [f.name for f in fs]
    assert code.count("__half_to_float(unsigned short h)") == 1
    assert all(f'void __launch_bounds__({k.launch.threads_per_block}) {k.name}(' in code for k in kernels)
    with pytest.raises(ValueError, match="appears twice"):
        c_source.print_module(opencl.OpenCLPrinter, [fs[0], fs[0]])


@needs_opencl
def test_shared_staging_copies_what_the_whole_block_reads():
    """64 threads a block, one output each: a block is one row i of 64 columns j, so per step
    of 8 along r it reads 8 values of x (one row) and 64 x 8 of w; every thread copies a
    share, and the result still matches numpy."""
    x, w, acc, out = dense_group(16, 64, 64)
    new, reds = stage.split_stage(out, {})
    f = tir.lower(stage.schedule_stage(new, reds, threads=64, adapt=False, shared=8), [x, w, new], "k")
    src = opencl.print_kernel(f)
    assert "__local float x_shared[8]" in src.code and "__local float w_shared[512]" in src.code
    assert src.code.count("barrier(CLK_LOCAL_MEM_FENCE)") == 2
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((16, 64)).astype("float32"), rng.standard_normal((64, 64)).astype("float32")
    y = np.zeros((16, 64), "float32")
    opencl.build(f)(a, b, y)
    np.testing.assert_allclose(y, np.maximum(a @ b.T + 1, 0), rtol=1e-5, atol=1e-5)
