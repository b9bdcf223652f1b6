"""Int8 ADD and MEAN kernels vs ``eval_node``: shifts, rounding, wrapping, negative sums."""
import numpy as np
import pytest
from quant_kernel_run import run_kernel

from compiler.quant import kernels
from compiler.quant.qgraph import QNode, QOp, eval_node


@pytest.mark.parametrize("shape,la,lb,shift,relu", [
    ((1, 16, 5, 5), 0, 2, 1, True),
    ((2, 24), 3, 0, 0, False),               # dense-shaped, no rounding term
    ((1, 8, 3, 3), 0, 0, 5, False),
    ((1, 8, 3, 3), 30, 31, 31, False),       # left shifts wrap past int32; shift 31
    ((1, 4, 2, 2), 33, 0, 40, True),         # outside the accelerator's range: on the CPU
])
def test_add_matches_oracle(rng, shape, la, lb, shift, relu):
    a = rng.integers(-128, 128, shape).astype(np.int8)
    b = rng.integers(-128, 128, shape).astype(np.int8)
    a.reshape(-1)[:4] = [-128, 127, -128, 127]
    b.reshape(-1)[:4] = [-128, 127, 127, -128]
    node = QNode(QOp.ADD, (0, 1), shape, "int8", 0,
                 {"la": la, "lb": lb, "shift": shift, "relu": relu})
    got = run_kernel(kernels.add(node), a, b)
    np.testing.assert_array_equal(got, eval_node(node, [a, b], {}))


@pytest.mark.parametrize("shape", [(1, 64, 7, 7), (2, 16, 5, 3), (1, 8, 4, 4)])
def test_mean_floors_negative_sums(rng, shape):
    x = rng.integers(-128, 128, shape).astype(np.int8)
    x[0, 0] = -128                        # most negative sum
    x[0, 1] = -1                          # -HW + HW//2: floor division, not truncation
    x[0, 2] = 127
    x[0, 3] = 0
    x[0, 3, 0, 0] = -1                    # (-1 + HW//2) // HW
    node = QNode(QOp.MEAN, (0,), shape[:2] + (1, 1), "int8", 3)
    got = run_kernel(kernels.mean(node, shape), x)
    want = eval_node(node, [x], {})
    np.testing.assert_array_equal(got, want)
    assert want[0, 1, 0, 0] == -1 and want[0, 0, 0, 0] == -128
