"""The packing registry (``graph_lower.packing``): each packing's declared shape and dtype
are those of what it produces, the packed values are the weight's, bad tags are named."""
import numpy as np
import pytest

from compiler.graph_lower.packing import PACKINGS, pack_param, packed_type
from compiler.topi import x86_bf16

CASES = {"conv": ((32, 6, 3, 3), 16), "dense": ((48, 10), 16), "dense_t": ((10, 48), 16),
         "dense_bf16": ((20, 9), 16), "conv_bf16": ((20, 5, 3, 1), 16),
         "conv_bf16_amx": ((20, 40, 3, 2), 16),
         "wino2": ((32, 6, 3, 3), 16), "wino4": ((16, 3, 3, 3), 8),
         **{f"{a}{n}": ((64, 32), 8) for a in ("strassen", "winograd") for n in (1, 2)},
         **{f"{a}{n}_t": ((32, 64), 8) for a in ("strassen", "winograd") for n in (1, 2)}}


def test_every_packing_has_a_case():
    assert set(CASES) == set(PACKINGS)


@pytest.mark.parametrize("kind", sorted(CASES))
def test_declared_type_is_what_pack_makes(kind):
    shape, block = CASES[kind]
    value = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    out = pack_param(value, f"{kind}:{block}")
    assert (out.shape, str(out.dtype)) == packed_type(shape, "float32", f"{kind}:{block}")
    assert out.flags.c_contiguous


@pytest.mark.parametrize("kind", ["strassen2", "winograd1"])
def test_fast_matmul_packings_of_w_and_its_transpose_agree(kind):
    # dense's weight w[N, K] and matmul's b[K, N] = w.T give the same packed operands
    w = np.random.default_rng(3).standard_normal((64, 32)).astype(np.float32)
    np.testing.assert_array_equal(pack_param(w, f"{kind}:8"), pack_param(w.T, f"{kind}_t:8"))


def test_conv_bf16_amx_packing_places_each_weight():
    # one B tile per (16 outputs, tap, 32 inputs): 16 rows of (16 outputs x 2 inputs)
    w = np.random.default_rng(2).standard_normal((20, 40, 3, 2)).astype(np.float32)
    p = pack_param(w, "conv_bf16_amx:16")
    bits = x86_bf16.to_bf16_bits(w)
    for o, c, kh, kw in [(0, 0, 0, 0), (19, 39, 2, 1), (17, 33, 1, 0), (5, 30, 0, 1)]:
        assert p[o // 16, kh, kw, c // 32, (c % 32) // 2, o % 16, c % 2] == bits[o, c, kh, kw]
    assert not p[1, :, :, :, :, 4:].any() and not p[:, :, :, 1, 4:].any()  # O and C padding


def test_conv_bf16_packing_places_each_weight():
    w = np.random.default_rng(1).standard_normal((20, 5, 3, 1)).astype(np.float32)
    p = pack_param(w, "conv_bf16:16")
    bits = x86_bf16.to_bf16_bits(w)
    for o, c, kh in [(0, 0, 0), (19, 4, 2), (17, 3, 1)]:
        assert p[o // 16, c // 2, kh, 0, o % 16, c % 2] == bits[o, c, kh, 0]
    assert not p[1, :, :, :, 4:].any() and not p[:, 2, :, :, :, 1].any()   # zero padding


@pytest.mark.parametrize("tag", ["winograd:4", "conv", "conv:x"])
def test_bad_tag_is_named(tag):
    with pytest.raises(ValueError, match=rf"packing tag must be '<kind>:<block>' with kind one "
                                         rf"of \[.*'conv_bf16'.*\], not '{tag}'"):
        pack_param(np.zeros((16, 1, 1, 1), np.float32), tag)
