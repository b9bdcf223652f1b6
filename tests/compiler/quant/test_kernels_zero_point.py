"""CPU kernels at a zero point (asymmetric activations, ``qgraph`` docstring) vs
``eval_node``: QUANTIZE adds it after rounding, DEQUANTIZE subtracts it, CONV2D / DENSE add
the output's after requantizing and clamp relu at it."""
import numpy as np
import pytest
from quant_kernel_run import run_kernel

from compiler.quant import kernels
from compiler.quant.qgraph import QNode, QOp, eval_node


@pytest.mark.parametrize("zp", [-128, -37, 91])
def test_quantize_and_dequantize_at_a_zero_point(rng, zp):
    x = (rng.standard_normal((2, 3, 5, 7)) * np.linspace(0, 16, 7)).astype(np.float32)
    exp = 4.3   # a model's own scale (not a power of two): float32 product
    q = QNode(QOp.QUANTIZE, (0,), x.shape, "int8", exp, zp=zp)
    got = run_kernel(kernels.quantize(x.shape, exp, zp=zp), x)
    want = eval_node(q, [x], {})
    np.testing.assert_array_equal(got, want)
    assert (got == -128).any() and (got == 127).any() and (got == zp).any()
    d = QNode(QOp.DEQUANTIZE, (0,), x.shape, "float32", attrs={"src_exp": exp, "src_zp": zp})
    back = run_kernel(kernels.dequantize(x.shape, exp, zp=zp), got)
    np.testing.assert_array_equal(back, eval_node(d, [got], {}))
    inside = (got > -128) & (got < 127)    # within 1/2 step of x where nothing clipped
    assert np.abs(back - x)[inside].max() <= 2.0 ** -exp / 2 * 1.0001


@pytest.mark.parametrize("relu", [False, True])
def test_conv2d_and_dense_add_the_output_zero_point(rng, relu):
    x = rng.integers(-128, 128, (1, 3, 7, 7)).astype(np.int8)
    w = rng.integers(-128, 128, (16, 3, 3, 3)).astype(np.int8)
    b = rng.integers(-2 ** 14, 2 ** 14, 16).astype(np.int32)
    attrs = {"strides": (1, 1), "padding": (0, 0), "shift": 3, "relu": relu, "mult": 21000,
             "post": 20}
    conv = QNode(QOp.CONV2D, (0,), (1, 16, 5, 5), "int8", 0.5, attrs, ("w", "b"), zp=-70)
    got = run_kernel(kernels.conv2d(conv, x.shape, w, b), x)
    want = eval_node(conv, [x], {"w": w, "b": b})
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(want)) > 20 and (want.min() == -70) == relu
    xd, wd = x.reshape(7, 21)[:, :16], w.reshape(16, 27)[:10, :16]
    dense = QNode(QOp.DENSE, (0,), (7, 10), "int8", 0.5,
                  {"shift": (2,) * 10, "relu": relu, "mult": tuple(range(20000, 30000, 1000)),
                   "post": 22}, ("w", "b"), zp=45)
    got = run_kernel(kernels.dense(dense, xd.shape, wd, b[:10]), np.ascontiguousarray(xd))
    want = eval_node(dense, [xd], {"w": wd, "b": b[:10]})
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(want)) > 10 and (want.min() >= 45) == relu


def test_steps_at_two_zero_points_run_two_kernels():
    """Two QUANTIZEs alike but for their zero points: the module (``lower_plan`` shares a
    kernel between steps of one signature) runs each at its own, as the oracle."""
    from compiler.quant import build_plan, run as run_oracle
    from compiler.quant.lower_plan import lower_plan
    from compiler.quant.qgraph import QGraph
    from driver.runtime import load_module
    from vta_hw.config import load_config
    shape = (2, 16)
    nodes = [QNode(QOp.INPUT, (), shape, "float32", name="x")]
    for zp in (0, 50):
        nodes.append(QNode(QOp.QUANTIZE, (0,), shape, "int8", 3, zp=zp))
        nodes.append(QNode(QOp.DEQUANTIZE, (len(nodes) - 1,), shape, "float32",
                           attrs={"src_exp": 3, "src_zp": zp}))
    qg = QGraph(nodes, [0], [2, 4], ["a", "b"], {})
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32) * 20
    got = load_module(lower_plan(build_plan(qg, load_config())), device="fsim")(x)
    want = run_oracle(qg, {"x": x})
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert not np.array_equal(want[0], want[1])   # the upper zero point clips more
