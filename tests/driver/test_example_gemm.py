"""The hand-written GEMM program equals numpy on every preset and tiles as documented."""
from __future__ import annotations

import numpy as np
import pytest

from driver.examples.gemm import gemm_program, pack, reference, unpack
from sim import functional
from vta_hw.config import load_config, preset_names


@pytest.mark.parametrize("preset", preset_names())
@pytest.mark.parametrize("mnk", [(64, 64, 64), (32, 96, 32)])
def test_gemm_matches_numpy(preset, mnk):
    cfg = load_config(preset)
    m, n, k = (max(d, cfg.BLOCK) // cfg.BLOCK * cfg.BLOCK for d in mnk)
    prog, expected = gemm_program(cfg, m, n, k, shift=5, seed=3)
    res = functional.run(prog)
    assert np.array_equal(unpack(prog.read(res.dram, "C")), expected)
    assert not any(res.leftover_tokens.values())


def test_reference_requantizes_with_wraparound():
    a = np.full((1, 4), 127, np.int8)
    b = np.full((1, 4), -128, np.int8)
    # 4 * 127 * -128 = -65024; >> 8 = -254 -> clipped to -127
    assert reference(a, b, 8)[0, 0] == -127
    assert reference(a, b, 31)[0, 0] == -1


def test_pack_roundtrip():
    x = np.arange(8 * 12, dtype=np.int8).reshape(8, 12)
    p = pack(x, 2, 4)
    assert p.shape == (4, 3, 2, 4)
    assert np.array_equal(p[1, 2], x[2:4, 8:12])
    assert np.array_equal(unpack(p), x)


def test_too_large_k_names_the_limit():
    cfg = load_config("1x4_i8w8a32_10_10_10_11_bus32")
    with pytest.raises(ValueError, match="k=1024 is too large for preset 1x4"):
        gemm_program(cfg, 4, 4, 1024)
