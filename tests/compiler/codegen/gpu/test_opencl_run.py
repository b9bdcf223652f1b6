"""Every GPU kernel through OpenCL (PoCL on CPU-only machines) against numpy."""

import numpy as np
import pytest

from compiler.codegen.gpu import opencl
from compiler.topi import gpu

from gpu_kernel_cases import check_outputs, kernel_cases
from tests.gpu_marks import needs_opencl

CASES = kernel_cases()


@needs_opencl
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_kernel_on_opencl(case):
    check_outputs(case, lambda f, args: opencl.build(f)(*args))


@needs_opencl
def test_argument_checks():
    k = opencl.build(gpu.add_relu(64))
    with pytest.raises(ValueError, match="takes 3 arguments"):
        k(np.zeros(64, np.float32))
    with pytest.raises(ValueError, match="must be a numpy array of 64 float32"):
        k(np.zeros(64, np.float32), np.zeros(64, np.float16), np.zeros(64, np.float32))


@needs_opencl
def test_scalar_parameter():
    from compiler.tir import ir
    from compiler.tir.ops import ForKind
    A = ir.Buffer("A", "float32", (32,))
    s, tx = ir.var("scale", "float32"), ir.var("tx")
    f = ir.PrimFunc("scale", (A, s), ir.For(tx, ir.const(0), ir.const(32), ForKind.SERIAL,
                                            ir.Store(A, ir.load(A, [tx]) * s, (tx,)), "threadIdx.x"))
    a = np.arange(32, dtype=np.float32)
    opencl.build(f)(a, 2.5)
    np.testing.assert_allclose(a, np.arange(32) * 2.5)
