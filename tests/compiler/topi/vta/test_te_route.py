"""The idiomatic route: te compute + VTA schedule -> tir.lower -> codegen.vta, bit-exact."""
import numpy as np
import pytest

from compiler.topi.vta.layout import (conv2d_reference, pack_bias, pack_nchw, pack_oihw,
                                      unpack_nchw)
from compiler.topi.vta.te_conv2d import conv2d_te_program
from sim import functional
from sim.races import find_races
from vta_hw.config import load_config
from vta_hw.isa import Alu, Gemm, Load, MemId

from vta_helpers import rand_i8


@pytest.mark.parametrize("preset,strides,padding", [("1x16_i8w8a32_15_15_18_17", (1, 1), (0, 0)),
                                                    ("1x8_i8w8a32_11_12_13_14", (2, 1), (1, 0)),
                                                    ("2x16_i8w8a32_15_15_18_18", (1, 1), (1, 1))])
def test_te_conv2d_matches_numpy(preset, strides, padding, rng):
    cfg = load_config(preset)
    B, BL = cfg.BATCH, cfg.BLOCK
    N, C, H, W, O, K = 2, 2 * BL, 7, 6, 4 * BL, 3
    x, w = rand_i8(rng, (N, C, H, W)), rand_i8(rng, (O, C, K, K))
    xp, wp = pack_nchw(x, B, BL), pack_oihw(w, BL, BL)
    prog = conv2d_te_program(cfg, xp.shape, wp.shape, strides, padding, oc_tile=2)
    img = prog.dram_image({"data": xp, "kernel": wp})
    res = functional.run(prog, img, schedule="random", seed=2, cmd_queue_depth=16,
                         token_queue_depth=32)
    got = unpack_nchw(prog.read(res.dram, "res"), N, O)
    sh, sw = strides
    ph, pw = padding
    xpad = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    OH, OW = (H + 2 * ph - K) // sh + 1, (W + 2 * pw - K) // sw + 1
    acc = np.zeros((N, O, OH, OW), np.int64)
    for a in range(K):
        for c in range(K):
            patch = xpad[:, :, a:a + sh * (OH - 1) + 1:sh, c:c + sw * (OW - 1) + 1:sw]
            acc += np.einsum("nchw,oc->nohw", patch, w[:, :, a, c].astype(np.int64))
    np.testing.assert_array_equal(got, acc.astype(np.int32).astype(np.int8))
    if any(padding):  # the padding is made by the LOAD pad fields, not by copies of zeros
        assert any(isinstance(i, Load) and i.mem == MemId.INP and i.y_pad_0 + i.x_pad_0 > 0
                   for i in prog.insns)
    assert find_races(prog, img) == []
    # the uop scope folds the output rows/columns into the GEMM loops
    assert any(isinstance(i, Gemm) and not i.reset and i.iter_out == OH and i.iter_in == OW
               for i in prog.insns)


@pytest.mark.parametrize("preset", ["1x16_i8w8a32_15_15_18_17", "1x8_i8w8a32_11_12_13_14",
                                    "2x16_i8w8a32_15_15_18_18", "1x32_i8w8a32_15_16_19_18_bus128"])
def test_te_conv2d_requantized_matches_numpy(preset, rng):
    """The full quantized op through te: bias (an ACC cache_read), shift, relu, clip as ALU
    stages tensorized in local.acc_buffer and run in place."""
    cfg = load_config(preset)
    B, BL = cfg.BATCH, cfg.BLOCK
    N, C, H, W, O, K = B, BL, 5, 6, 4 * BL, 3
    x, w = rand_i8(rng, (N, C, H, W)), rand_i8(rng, (O, C, K, K))
    b = rng.integers(-3000, 3000, O).astype(np.int32)
    xp, wp = pack_nchw(x, B, BL), pack_oihw(w, BL, BL)
    prog = conv2d_te_program(cfg, xp.shape, wp.shape, (1, 1), (1, 1), oc_tile=2, bias=True,
                             shift=5, relu=True, requantize=True)
    img = prog.dram_image({"data": xp, "kernel": wp, "bias": pack_bias(b, B, BL)})
    res = functional.run(prog, img, schedule="random", seed=7, cmd_queue_depth=16,
                         token_queue_depth=32)
    got = unpack_nchw(prog.read(res.dram, "res"), N, O)
    np.testing.assert_array_equal(got, conv2d_reference(x, w, b, (1, 1), (1, 1), 5, True))
    assert find_races(prog, img) == []
    assert {i.alu_op.name for i in prog.insns if isinstance(i, Alu)} == {"ADD", "SHR", "MAX", "MIN"}
