"""pack / unpack kernels vs ``partition.pack_value`` / ``unpack_value``: channel and batch
padding, the dense (N, C) <-> (1, C, 1, N) image convention."""
import numpy as np
import pytest
from quant_kernel_run import run_kernel

from compiler.quant import kernels
from compiler.quant.partition import pack_value, unpack_value
from vta_hw.config import load_config


def _packed_shape(shape, batch, block):
    N, C, H, W = (1, shape[1], 1, shape[0]) if len(shape) == 2 else shape
    return (-(-N // batch), -(-C // block), H, W, batch, block)


@pytest.mark.parametrize("preset", ["1x16_i8w8a32_15_15_18_17", "2x16_i8w8a32_15_15_18_18"])
@pytest.mark.parametrize("shape", [(1, 64, 5, 5), (3, 24, 4, 2), (1, 3, 7, 7), (5, 40), (1, 16)])
def test_pack_matches_pack_value(rng, preset, shape):
    cfg = load_config(preset)
    x = rng.integers(-128, 128, shape).astype(np.int8)
    want_shape = _packed_shape(shape, cfg.BATCH, cfg.BLOCK_IN)
    want = pack_value(cfg, x, want_shape)
    got = run_kernel(kernels.pack(shape, want_shape), x)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("preset", ["1x16_i8w8a32_15_15_18_17", "2x16_i8w8a32_15_15_18_18"])
@pytest.mark.parametrize("shape", [(1, 64, 5, 5), (3, 24, 4, 2), (5, 40), (2, 10)])
def test_unpack_crops_like_unpack_value(rng, preset, shape):
    cfg = load_config(preset)
    packed_shape = _packed_shape(shape, cfg.BATCH, cfg.BLOCK_OUT)
    y = rng.integers(-128, 128, packed_shape).astype(np.int8)
    np.testing.assert_array_equal(run_kernel(kernels.unpack(packed_shape, shape), y),
                                  unpack_value(y, shape))


def test_pack_refuses_a_shape_that_does_not_pack():
    with pytest.raises(ValueError, match=r"cannot pack a value of shape \[1, 20, 4, 4\]"):
        kernels.pack((1, 20, 4, 4), (1, 1, 4, 4, 1, 16))
