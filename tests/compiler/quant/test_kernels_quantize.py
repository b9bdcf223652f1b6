"""QUANTIZE / DEQUANTIZE kernels vs ``eval_node``: round half to even as ``np.rint``."""
import numpy as np
import pytest
from quant_kernel_run import run_kernel

from compiler.quant import kernels
from compiler.quant.qgraph import QNode, QOp, eval_node


@pytest.mark.parametrize("exp", [-3, 0, 4, 7])
def test_quantize_rounds_ties_to_even_and_saturates(rng, exp):
    # every x.5 from -140.5 to 140.5 (282 ties) (ties: half to even, -0.5 -> -0, 2.5 -> 2, 3.5 -> 4),
    # values past the int8 range on both sides, and random values
    ties = np.arange(-281, 283, 2, dtype=np.float32) / 2
    x = np.concatenate([ties, rng.standard_normal(438).astype(np.float32) * 90])
    x = (x * np.float32(2.0 ** -exp)).reshape(2, 5, 9, 8)
    node = QNode(QOp.QUANTIZE, (0,), x.shape, "int8", exp)
    got = run_kernel(kernels.quantize(x.shape, exp), x)
    want = eval_node(node, [x], {})
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.int8
    assert list(got.reshape(-1)[140:144]) == list(np.rint(ties[140:144]).astype(np.int8))


def test_quantize_extremes():
    x = np.array([0.0, -0.0, 1e-30, -1e-30, 1e30, -1e30, np.inf, -np.inf, 127.49, 127.5, -128.5,
                  0.49999997, -0.49999997, 1.5, -1.5, 2.5, -2.5], np.float32)
    node = QNode(QOp.QUANTIZE, (0,), x.shape, "int8", 0)
    np.testing.assert_array_equal(run_kernel(kernels.quantize(x.shape, 0), x),
                                  eval_node(node, [x], {}))


@pytest.mark.parametrize("exp", [-2, 0, 5])
def test_dequantize(rng, exp):
    q = rng.integers(-128, 128, (3, 7, 16)).astype(np.int8)
    node = QNode(QOp.DEQUANTIZE, (0,), q.shape, "float32", attrs={"src_exp": exp})
    got = run_kernel(kernels.dequantize(q.shape, exp), q)
    want = eval_node(node, [q], {})
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)
