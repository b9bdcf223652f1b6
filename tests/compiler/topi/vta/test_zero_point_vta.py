"""conv2d / dense with an output zero point (asymmetric activations): after the
requantization, ALU ADD the zero point (an immediate), MAX it (relu) or -128, MIN 127;
bit-exact with numpy's ``layout.requantize``."""
import numpy as np
import pytest

from compiler.topi.vta import conv2d_program, dense_program
from compiler.topi.vta.layout import requantize
from vta_hw.config import load_config

from vta_helpers import rand_i8, run_kernel


def test_requantize_adds_the_zero_point_and_relu_clamps_at_it():
    acc = np.array([[-40, 8, 400, -4000]], np.int32)
    # >> 2: -10, 2, 100, -1000; + 30: 20, 32, 130 -> 127, -970 -> -128 (relu: 30 = real 0)
    np.testing.assert_array_equal(requantize(acc, 2, False, zero=30), [[20, 32, 127, -128]])
    np.testing.assert_array_equal(requantize(acc, 2, True, zero=30), [[30, 32, 127, 30]])


@pytest.mark.parametrize("zero, relu", [(-117, False), (23, True)])
def test_conv_per_channel_multipliers_and_zero_point(zero, relu, rng):
    mults = tuple(int(v) for v in rng.integers(8000, 32768, 24))
    shifts = tuple(int(v) for v in rng.integers(0, 3, 24))
    k = conv2d_program(load_config(), (1, 20, 5, 4), (24, 20, 3, 3), 1, 1, shift=shifts,
                       mult=mults, post=26, relu=relu, zero=zero)
    x, w = rand_i8(rng, (1, 20, 5, 4)), rand_i8(rng, (24, 20, 3, 3))
    b = rng.integers(-4000, 4000, 24).astype(np.int32)
    got, races = run_kernel(k, x, w, b, 3)
    want = k.reference(x, w, b)
    np.testing.assert_array_equal(got, want)
    assert races == [] and len(np.unique(want)) > 20
    assert (want.min() == zero) == relu


def test_dense_immediate_multiplier_and_zero_point(rng):
    k = dense_program(load_config(), (3, 40), (10, 40), shift=4, mult=23171, post=22, zero=-60)
    x, w = rand_i8(rng, (3, 40)), rand_i8(rng, (10, 40))
    b = rng.integers(-2000, 2000, 10).astype(np.int32)
    got, races = run_kernel(k.conv, x[:, :, None, None], w[:, :, None, None], b)
    want = k.reference(x, w, b)
    np.testing.assert_array_equal(got[:, :, 0, 0], want)
    assert races == [] and len(np.unique(want)) > 10


def test_zero_point_error():
    with pytest.raises(ValueError, match=r"zero \(the output's zero point\) must be in "
                                         r"\[-128, 127\], not 200"):
        dense_program(load_config(), (1, 16), (16, 16), zero=200)
