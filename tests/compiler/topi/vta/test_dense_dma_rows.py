"""A dense layer's weight tile is one LOAD of ``toc`` rows: loops of one iteration (one
input-channel block, a 1x1 kernel) are bound to their start before the copy's two innermost
loops become the DMA's rows and columns, so the instruction count follows the tiles, not the
weight blocks (VGG-19's 25088 x 4096 layer: 1568 x 4 loads, not 1568 x 256)."""
import numpy as np
import pytest

from compiler.topi.vta import conv2d_program
from compiler.topi.vta.tiling import Tiling
from tests.compiler.topi.vta.vta_helpers import rand_i8, run_kernel
from vta_hw.config import load_config
from vta_hw.isa import Load, MemId


@pytest.mark.parametrize("preset, cin, cout, toc, tic, wres", [
    (None, 256, 512, 8, 1, False),                      # 4 x 16 tiles: 64 LOADs of 8 rows
    (None, 256, 512, 32, 1, True),                      # weights resident: one per channel tile
    ("1x8_i8w8a32_11_12_13_14", 96, 40, 5, 2, False),   # edge: 5 output blocks, 12 input blocks
])
def test_dense_weight_tiles_are_one_load_each_and_bit_exact(preset, cin, cout, toc, tic, wres):
    cfg = load_config(preset)
    k = conv2d_program(cfg, (1, cin, 1, 1), (cout, cin, 1, 1), shift=6, relu=True,
                       tiling=Tiling(1, 1, toc, tic, 1, 2, wres))
    s = k.shape
    wgt = [i for i in k.program.insns if isinstance(i, Load) and i.mem == MemId.WGT and i.x_size]
    # one LOAD per (output-channel tile, reduction step), or per channel tile when resident
    assert len(wgt) == -(-s.OB // toc) * (1 if wres else -(-s.CB // tic))
    # rows of toc output blocks (resident: toc x CB contiguous blocks, one row)
    assert {(i.y_size, i.x_size) for i in wgt} == {(1, toc * s.CB) if wres else (toc, tic)}
    rng = np.random.default_rng(0)
    x, w, b = rand_i8(rng, (1, cin, 1, 1)), rand_i8(rng, (cout, cin, 1, 1)), rng.integers(
        -1000, 1000, cout).astype(np.int32)
    out, races = run_kernel(k, x, w, b)
    np.testing.assert_array_equal(out, k.reference(x, w, b))
    assert not races
