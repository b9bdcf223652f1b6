"""Vector loads whose lanes step by a small constant (a stride-2 conv's taps): one
contiguous load of the span and a shuffle (``codegen.llvm.expr.STRIDED_LOAD_MAX``), the same
values as numpy, for any lane count (a 28-column depthwise row); wider strides still load
lane by lane."""
import numpy as np
import pytest

import compiler
from compiler import te


def _strided(n, stride, lanes, dtype):
    x = te.placeholder((n * stride + 3,), dtype, "x")
    y = te.compute((n,), lambda i: x[i * stride + 1] + x[i * stride + 2], name="y")
    s = te.create_schedule(y)
    io, ii = s[y].split(y.op.axis[0], factor=lanes)
    s[y].vectorize(ii)
    return compiler.build(s, [x, y], name="k")


@pytest.mark.parametrize("stride,lanes,dtype,shuffled", [
    (2, 16, "int8", True), (3, 8, "float32", True), (4, 4, "int32", True),
    (2, 7, "int8", True), (2, 28, "float32", True),   # any lane count
    (5, 8, "int16", False),     # stride 5: lane by lane
])
def test_strided_vector_load(stride, lanes, dtype, shuffled):
    n = lanes * 3
    f = _strided(n, stride, lanes, dtype)
    x = (np.arange(n * stride + 3) % 100).astype(dtype)
    y = np.zeros(n, dtype)
    f(x, y)
    np.testing.assert_array_equal(y, x[1:n * stride + 1:stride] + x[2:n * stride + 2:stride])
    assert ("shufflevector" in f.llvm_ir) == shuffled
