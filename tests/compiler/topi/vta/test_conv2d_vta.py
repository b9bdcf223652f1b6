"""conv2d and dense on the accelerator: bit-exact against numpy on every preset, under a
random interleaving of the modules, with no races."""
import numpy as np
import pytest

from compiler.topi.vta import (Conv2dShape, Tiling, TilingError, candidates, conv2d_program,
                               dense_program)
from compiler.topi.vta.layout import pack_nchw, unpack_nchw
from vta_hw.config import VTAConfig, load_config, preset_names

from vta_helpers import rand_i8, run_kernel

PRESETS = preset_names()


def check_conv(cfg, rng, data_shape, kernel_shape, strides=1, padding=0, seed=0, **kw):
    k = conv2d_program(cfg, data_shape, kernel_shape, strides, padding, **kw)
    x, w = rand_i8(rng, data_shape), rand_i8(rng, kernel_shape)
    b = rng.integers(-4000, 4000, kernel_shape[0]).astype(np.int32)
    got, races = run_kernel(k, x, w, b, seed)
    np.testing.assert_array_equal(got, k.reference(x, w, b))
    assert races == []
    return k


@pytest.mark.parametrize("preset", PRESETS)
def test_conv3x3_pad_relu_every_preset(preset, rng):
    check_conv(load_config(preset), rng, (1, 8, 7, 6), (9, 8, 3, 3), 1, 1, shift=4, relu=True)


@pytest.mark.parametrize("preset", PRESETS)
def test_conv_many_tiles_two_threads_every_preset(preset, rng):
    """A fixed small tiling: many output tiles (with remainders) split over two virtual
    threads, several reduction steps, stride 2x1, padding 1x0, batch 3."""
    k = check_conv(load_config(preset), rng, (3, 5, 9, 8), (7, 5, 3, 2), (2, 1), (1, 0),
                   shift=2, tiling=Tiling(2, 3, 1, 1, 2, 2), seed=3)
    assert k.stats.insns["GEMM"] > 8


@pytest.mark.parametrize("preset", PRESETS)
def test_conv_weights_resident_every_preset(preset, rng):
    """Weights loaded once per channel tile into one WGT buffer both threads read."""
    k = check_conv(load_config(preset), rng, (3, 5, 9, 8), (7, 5, 3, 2), (2, 1), (1, 0),
                   shift=2, relu=True, tiling=Tiling(2, 3, 1, 1, 2, 2, wres=True), seed=4)
    assert k.stats.insns["LOAD_WGT"] == -(-7 // k.env.BLOCK_OUT)


@pytest.mark.parametrize("preset", PRESETS)
def test_dense_every_preset(preset, rng):
    cfg = load_config(preset)
    k = dense_program(cfg, (3, 40), (37, 40), shift=5, relu=False)
    x, w = rand_i8(rng, (3, 40)), rand_i8(rng, (37, 40))
    b = rng.integers(-2000, 2000, 37).astype(np.int32)
    got, races = run_kernel(k.conv, x[:, :, None, None], w[:, :, None, None], b)
    got = got[:, :, 0, 0]
    np.testing.assert_array_equal(got, k.reference(x, w, b))
    assert got.shape == (3, 37) and races == []


@pytest.mark.parametrize("preset", PRESETS)
def test_per_channel_shifts_every_preset(preset, rng):
    """Per-output-channel shifts: a shift vector loaded into ACC beside the bias and the
    ALU's SHR with it as tensor operand, one shift per lane."""
    shifts = tuple(int(v) for v in rng.integers(0, 16, 37))
    k = check_conv(load_config(preset), rng, (2, 20, 5, 4), (37, 20, 3, 3), 1, 1,
                   shift=shifts, relu=True, seed=5)
    assert k.per_channel and k.program.buffer("shift").kind == "param"
    assert k.stats.insns["ALU"] >= 4


def test_per_channel_dense_and_errors(rng):
    cfg = load_config()
    shifts = tuple(range(10))
    k = dense_program(cfg, (3, 40), (10, 40), shift=shifts)
    x, w = rand_i8(rng, (3, 40)), rand_i8(rng, (10, 40))
    b = rng.integers(-2000, 2000, 10).astype(np.int32)
    got, _ = run_kernel(k.conv, x[:, :, None, None], w[:, :, None, None], b)
    np.testing.assert_array_equal(got[:, :, 0, 0], k.reference(x, w, b))
    with pytest.raises(ValueError, match="per-channel shift has 3 entries, the kernel 10 output"):
        dense_program(cfg, (3, 40), (10, 40), shift=(1, 2, 3))
    with pytest.raises(ValueError, match=r"shift must be in \[0, 31\], not 32"):
        dense_program(cfg, (3, 40), (2, 40), shift=(1, 32))


def test_255_output_channels(rng):
    check_conv(load_config(), rng, (1, 16, 4, 4), (255, 16, 3, 3), 1, 1, shift=6)


def test_255_output_channels_small_preset(rng):
    check_conv(load_config("1x8_i8w8a32_11_12_13_14"), rng, (1, 3, 3, 3), (255, 3, 3, 3), 1, 1,
               shift=6, relu=True)


def test_no_bias_no_shift_1x1(rng):
    check_conv(load_config(), rng, (2, 20, 5, 5), (24, 20, 1, 1), bias=False)


def test_kernel_7x7_stride2_pad3(rng):
    """The ResNet stem's shape, shrunk: 7x7 kernel, stride 2, padding 3, 3 input channels."""
    check_conv(load_config("1x8_i8w8a32_11_12_13_14"), rng, (1, 3, 12, 11), (8, 3, 7, 7), 2, 3,
               shift=8, relu=True)


def test_one_and_two_virtual_threads_agree(rng):
    cfg = load_config()
    x, w = rand_i8(rng, (1, 32, 6, 6)), rand_i8(rng, (32, 32, 3, 3))
    outs = []
    for vt in (1, 2):
        k = conv2d_program(cfg, x.shape, w.shape, 1, 1, shift=7, relu=True, bias=False,
                           tiling=Tiling(2, 6, 1, 1, 3, vt))
        outs.append(run_kernel(k, x, w, seed=vt)[0])
    np.testing.assert_array_equal(outs[0], outs[1])


def test_cycle_model_gives_the_same_output(rng):
    from sim import cycle
    cfg = load_config()
    k = conv2d_program(cfg, (1, 16, 6, 6), (32, 16, 3, 3), 1, 1, shift=6,
                       tiling=Tiling(3, 6, 1, 1, 3, 2))
    x, w = rand_i8(rng, (1, 16, 6, 6)), rand_i8(rng, (32, 16, 3, 3))
    b = rng.integers(-100, 100, 32).astype(np.int32)
    img = k.program.dram_image(k.inputs(x, w, b))
    r = cycle.run(k.program, img)
    got = k.unpack(k.program.read(r.dram, "out"))
    np.testing.assert_array_equal(got, k.reference(x, w, b))
    assert r.cycles > 0 and 0 < r.gemm_utilization <= 1


@pytest.mark.parametrize("kind", ["conv", "dense"])
def test_block1_bus8_on_the_cycle_model(kind, rng):
    """BLOCK=1 on an 8-bit bus (the 1x1 preset): the compiled program's output on the
    cycle model (tsim) is numpy's, as on the functional one (the tests above)."""
    from sim import cycle
    cfg = load_config("1x1_i8w8a32_10_9_9_11_bus8_cq0")
    if kind == "conv":
        k = conv2d_program(cfg, (1, 4, 5, 5), (6, 4, 3, 3), 1, 1, shift=5, relu=True)
        x, w = rand_i8(rng, (1, 4, 5, 5)), rand_i8(rng, (6, 4, 3, 3))
    else:
        k = dense_program(cfg, (2, 12), (5, 12), shift=4, relu=False).conv
        x, w = rand_i8(rng, (2, 12, 1, 1)), rand_i8(rng, (5, 12, 1, 1))
    b = rng.integers(-500, 500, w.shape[0]).astype(np.int32)
    r = cycle.run(k.program, k.program.dram_image(k.inputs(x, w, b)))
    got = k.unpack(k.program.read(r.dram, "out"))
    want = k.reference(x, w, b)
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(want)) > 2 and r.cycles > 0


RESNET = [(64, 56, 3, 1, 1), (128, 28, 3, 1, 1), (256, 14, 3, 1, 1), (512, 7, 3, 1, 1),
          (3, 224, 7, 2, 3)]


@pytest.mark.parametrize("preset", PRESETS)
def test_tile_search_never_empty(preset):
    cfg = load_config(preset)
    for c, hw, k, s, p in RESNET:
        shape = Conv2dShape(1, -(-c // cfg.BLOCK), hw, hw, -(-max(c, 64) // cfg.BLOCK), k, k,
                            s, s, p, p)
        (t,) = candidates(shape, cfg)
        need = t.buffers(shape, True)
        assert need["inp"] * t.vt <= cfg.inp_depth and need["acc"] * t.vt <= cfg.acc_depth
        assert need["wgt"] * (1 if t.wres else t.vt) <= cfg.wgt_depth  # wres: shared


def test_tiling_error_names_the_buffer():
    tiny = VTAConfig(LOG_BLOCK=4, LOG_UOP_BUFF_SIZE=10, LOG_INP_BUFF_SIZE=10,
                     LOG_WGT_BUFF_SIZE=10, LOG_ACC_BUFF_SIZE=11)  # 4 WGT entries
    with pytest.raises(TilingError, match=r"wgt buffer"):
        candidates(Conv2dShape(1, 1, 8, 8, 1, 5, 5), tiny)


def test_padding_over_15_is_rejected(rng):
    from compiler.codegen.vta.codegen import CodegenError
    with pytest.raises(CodegenError, match=r"pad field"):
        conv2d_program(load_config(), (1, 16, 4, 4), (16, 16, 3, 3), 1, 16)


def test_an_all_padding_copy_of_more_rows_than_the_pad_field_is_split(rng):
    """A 3x3 conv over a 1x1 input with one kernel row per step: the first and the last
    kernel row read only padding, 16 channel blocks x 1 row of it, one more than a LOAD's
    pad field holds; the copy becomes two LOADs of zero rows (15 + 1), bit-exact."""
    cfg = load_config()
    k = check_conv(cfg, rng, (1, 16 * cfg.BLOCK_IN, 1, 1), (cfg.BLOCK_OUT, 16 * cfg.BLOCK_IN, 3, 3),
                   1, 1, shift=6, tiling=Tiling(1, 1, 1, 16, 1, 1))
    zero_rows = sorted(i.y_pad_0 for i in k.program.insns
                       if type(i).__name__ == "Load" and i.y_size == 0)
    assert zero_rows and max(zero_rows) == 15 and 1 in zero_rows


def test_pack_roundtrip(rng):
    x = rand_i8(rng, (3, 21, 4, 5))
    p = pack_nchw(x, 2, 16)
    assert p.shape == (2, 2, 4, 5, 2, 16)
    np.testing.assert_array_equal(unpack_nchw(p, 3, 21), x)


@pytest.mark.parametrize("zero", [0, 3])
def test_the_epilogue_is_one_requant_per_tile_without_a_zero_point(rng, zero):
    """With a bias and an immediate shift the epilogue is one REQUANT per tile and the
    accumulator is reset once per virtual thread (REQUANT leaves it zero, so edge tiles
    and the next tile start from zeros); a zero point keeps reset, ADD, SHR, ADD, MAX,
    MIN per tile. Bit-exact either way."""
    from vta_hw.isa import Alu, AluOp, Gemm
    cfg = load_config("1x16_i8w8a32_15_15_18_17")
    t = Tiling(2, 3, 1, 1, 3, 2)           # 3x2 spatial x 2 channel tiles = 12, with edges
    k = check_conv(cfg, rng, (1, 16, 5, 5), (32, 16, 3, 3), 1, 1, shift=7, relu=True,
                   tiling=t, zero=zero)
    ops = [i.alu_op for i in k.program.insns if isinstance(i, Alu)]
    resets = sum(isinstance(i, Gemm) and i.reset for i in k.program.insns)
    if zero:
        assert AluOp.REQUANT not in ops and resets == 12
    else:
        assert ops == [AluOp.REQUANT] * 12 and resets == 2
