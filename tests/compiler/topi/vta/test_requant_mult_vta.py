"""conv2d / dense with a multiplier after the shift (scales that are not powers of two):
MUL (immediate or per-lane vector), SHR, ADD 2**14, SHR 15, bit-exact with numpy."""
import numpy as np
import pytest

from compiler.topi.vta import conv2d_program, dense_program
from compiler.topi.vta.layout import requantize
from vta_hw.config import load_config

from vta_helpers import rand_i8, run_kernel


def test_requantize_rounds_the_product_half_up():
    acc = np.array([[100, -100, 7, 1000, -1001]], np.int32)
    # (acc >> 1) * 3 * 2**14 / 2**16 = (acc >> 1) * 0.75: 37.5 -> 38, -37.5 -> -37, 2.25 -> 2,
    # 375 and -375.75 clip
    got = requantize(acc, 1, False, mult=3 * 2 ** 14, post=16)
    np.testing.assert_array_equal(got, [[38, -37, 2, 127, -128]])


@pytest.mark.parametrize("preset", ["1x16_i8w8a32_15_15_18_17", "1x4_i8w8a32_10_10_10_11_bus32", "2x16_i8w8a32_15_15_18_18"])
def test_conv_immediate_multiplier(preset, rng):
    k = conv2d_program(load_config(preset), (1, 20, 5, 4), (24, 20, 3, 3), 1, 1, shift=2,
                       mult=23171, post=26, relu=True)
    x, w = rand_i8(rng, (1, 20, 5, 4)), rand_i8(rng, (24, 20, 3, 3))
    b = rng.integers(-4000, 4000, 24).astype(np.int32)
    got, races = run_kernel(k, x, w, b, 3)
    want = k.reference(x, w, b)
    np.testing.assert_array_equal(got, want)
    assert races == [] and 0 < np.count_nonzero(want) and np.abs(want).max() < 127


def test_dense_per_channel_multipliers(rng):
    mults = tuple(int(v) for v in rng.integers(8000, 32768, 10))
    shifts = tuple(int(v) for v in rng.integers(0, 4, 10))
    k = dense_program(load_config(), (3, 40), (10, 40), shift=shifts, mult=mults, post=24)
    assert k.conv.program.buffer("mult").kind == "param"
    x, w = rand_i8(rng, (3, 40)), rand_i8(rng, (10, 40))
    b = rng.integers(-2000, 2000, 10).astype(np.int32)
    got, races = run_kernel(k.conv, x[:, :, None, None], w[:, :, None, None], b)
    want = k.reference(x, w, b)
    np.testing.assert_array_equal(got[:, :, 0, 0], want)
    assert races == [] and len(np.unique(want)) > 5


def test_multiplier_errors():
    cfg = load_config()
    with pytest.raises(ValueError, match=r"mult must be in \[1, 32767\] \(a 16-bit ALU immediate\), not 40000"):
        dense_program(cfg, (1, 16), (16, 16), mult=40000, post=20)
    with pytest.raises(ValueError, match=r"post must be in \[15, 46\]"):
        dense_program(cfg, (1, 16), (16, 16), mult=4000, post=12)
    with pytest.raises(ValueError, match="per-channel mult has 2 entries, the kernel 16 output"):
        dense_program(cfg, (1, 16), (16, 16), mult=(1, 2), post=20)


def test_cycle_model_gives_the_same_output(rng):
    from sim import cycle
    mults = tuple(int(v) for v in rng.integers(8000, 32768, 32))
    k = conv2d_program(load_config(), (1, 16, 6, 6), (32, 16, 3, 3), 1, 1, shift=3,
                       mult=mults, post=22)
    x, w = rand_i8(rng, (1, 16, 6, 6)), rand_i8(rng, (32, 16, 3, 3))
    b = rng.integers(-100, 100, 32).astype(np.int32)
    r = cycle.run(k.program, k.program.dram_image(k.inputs(x, w, b)))
    np.testing.assert_array_equal(k.unpack(k.program.read(r.dram, "out")), k.reference(x, w, b))
    assert r.cycles > 0
