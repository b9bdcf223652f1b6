"""The GEMM datapath of the golden model: float-BLAS accumulation equals int32 wraparound."""
import numpy as np
import pytest

from sim.machine import Machine
from vta_hw.config import load_config, preset_names


@pytest.mark.parametrize("preset", preset_names())
def test_accumulate_equals_int32_wraparound(preset):
    cfg = load_config(preset)
    m = Machine(cfg)
    rng = np.random.default_rng(7)
    m.inp[:] = rng.integers(-128, 128, m.inp.shape)
    m.wgt[:] = rng.integers(-128, 128, m.wgt.shape)
    m.inp[0] = -128  # extreme products: (-128) * (-128) summed over BLOCK_IN
    m.wgt[0] = -128
    m.acc[:] = rng.integers(-2**31, 2**31, m.acc.shape, dtype=np.int64).astype(np.int32)
    ref = m.acc.copy()
    n = 3000
    dst = rng.integers(0, min(4, cfg.acc_depth), n)  # many repeats per dst: sums wrap
    src = np.r_[np.zeros(500, np.int64), rng.integers(0, cfg.inp_depth, n - 500)]
    wgt = np.r_[np.zeros(500, np.int64), rng.integers(0, cfg.wgt_depth, n - 500)]
    np.add.at(ref, dst, m.inp[src].astype(np.int32) @ m.wgt[wgt].astype(np.int32).transpose(0, 2, 1))
    m._accumulate(dst, src, wgt)
    assert np.array_equal(m.acc, ref)
