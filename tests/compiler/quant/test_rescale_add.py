"""The int8 add between scales (``QOp.RESCALE_ADD``: a QDQ residual add whose scales are not
powers of two): the CPU kernel equals the oracle bit for bit, the oracle stays within 1 LSB
of the exact float add, and a QDQ model's residual add runs as one."""
import numpy as np
import pytest
from quant_kernel_run import run_kernel

from compiler.quant import kernels
from compiler.quant.lut import add_multipliers, scale_of
from compiler.quant.qdq import exponent_of_scale
from compiler.quant.qgraph import QNode, QOp, eval_node


def _node(sa, sb, sy, za, zb, zy, shape=(2, 5, 3, 7)):
    ea, eb, ey = (exponent_of_scale(float(np.float32(s))) for s in (sa, sb, sy))
    ma, mb, post = add_multipliers(ea, eb, ey)
    return QNode(QOp.RESCALE_ADD, (0, 1), shape, "int8", ey,
                 {"za": za, "zb": zb, "ma": ma, "mb": mb, "post": post}, zp=zy), (ea, eb, ey)


CASES = [(0.05, 0.031, 0.07, 0, 0, 0), (0.2, 0.011, 0.13, 5, -128, 9), (1e-3, 0.9, 0.5, 0, 0, -3)]


@pytest.mark.parametrize("sa, sb, sy, za, zb, zy", CASES)
def test_oracle_within_one_lsb_of_float_add(sa, sb, sy, za, zb, zy):
    node, (ea, eb, ey) = _node(sa, sb, sy, za, zb, zy)
    a, b = np.meshgrid(np.arange(-128, 128), np.arange(-128, 128))   # every pair, int64
    got = eval_node(node, [a.astype(np.int8), b.astype(np.int8)], {}).astype(np.int64)
    real = ((a - za) * float(scale_of(ea)) + (b - zb) * float(scale_of(eb))) / float(scale_of(ey))
    want = np.clip(np.rint(real) + zy, -128, 127)
    assert np.abs(got - want).max() <= 1


@pytest.mark.parametrize("sa, sb, sy, za, zb, zy", CASES)
def test_kernel_equals_oracle(sa, sb, sy, za, zb, zy):
    node, _ = _node(sa, sb, sy, za, zb, zy)
    rng = np.random.default_rng(3)
    a, b = (rng.integers(-128, 128, node.shape).astype(np.int8) for _ in range(2))
    got = run_kernel(kernels.rescale_add(node), a, b)
    np.testing.assert_array_equal(got, eval_node(node, [a, b], {}))


def test_multipliers_stay_in_15_bits():
    assert add_multipliers(exponent_of_scale(1.0), exponent_of_scale(1.0), exponent_of_scale(2 ** -20)) is None
    ma, mb, post = add_multipliers(exponent_of_scale(0.3), exponent_of_scale(0.01), exponent_of_scale(0.2))
    assert max(ma, mb) < 2 ** 15 and 1 <= post <= 30 and abs(ma / 2 ** post - 1.5) < 1e-4
