"""bf16 on AVX512-BF16 (run where the CPU has it, against the numpy emulation and within
cosine 0.999 of fp32) and AMX int8 / bf16 tiles (compiled, instruction selection checked)."""
import re

import numpy as np
import pytest

import compiler
from compiler.codegen.llvm.target import host_target
from compiler.topi import x86_amx, x86_bf16

HOST_BF16 = "+avx512bf16" in host_target().features.split(",")
AMX = "llvm -mcpu=sapphirerapids -mattr=+avx512f,+avx512bw,+amx-tile,+amx-int8,+amx-bf16"
SPR_BF16 = "llvm -mcpu=sapphirerapids -mattr=+avx512f,+avx512bw,+avx512bf16"


def _run_dense_bf16(x, w, b):
    M, K = x.shape
    s, args = x86_bf16.dense_bf16(M, K, w.shape[0])
    f = compiler.build(s, args, name="dense_bf16")
    out = np.zeros(args[-1].shape, np.float32)
    f(x, x86_bf16.pack_bf16_weight(w), b, np.zeros(args[3].shape, np.int16), out)
    return out


def test_bf16_bits_round_to_nearest_even():
    x = np.array([1.0, 1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, -2.5, 3e38], np.float32)
    got = x86_bf16.from_bf16_bits(x86_bf16.to_bf16_bits(x))
    # 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1); 1 + 3 * 2^-8 rounds up
    np.testing.assert_array_equal(got[:4], [1.0, 1.0, 1.0 + 2 ** -6, -2.5])
    assert abs(got[4] / 3e38 - 1) < 2 ** -8


@pytest.mark.skipif(not HOST_BF16, reason="this CPU has no AVX512-BF16 (the assembly test "
                    "covers the path)")
@pytest.mark.parametrize("M,K,N", [(1, 64, 16), (3, 37, 20)])
def test_dense_bf16_matches_emulation(M, K, N):
    rng = np.random.default_rng(M * K)
    x, w = rng.standard_normal((M, K), np.float32), rng.standard_normal((N, K), np.float32)
    b = rng.standard_normal(N, np.float32)
    got = _run_dense_bf16(x, w, b)
    np.testing.assert_allclose(got, x86_bf16.bf16_reference(x, w) + b, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(not HOST_BF16, reason="this CPU has no AVX512-BF16")
@pytest.mark.skipif(not HOST_BF16, reason="this CPU has no AVX512-BF16 (the assembly test "
                    "covers the path)")
@pytest.mark.parametrize("x_shape,w_shape,strides,pads", [
    ((1, 3, 9, 9), (20, 3, 3, 3), (2, 2), (1, 1, 1, 1)),     # odd C, O not a multiple of 16
    ((1, 16, 6, 8), (32, 16, 1, 1), (1, 1), (0, 0, 0, 0)),
    ((2, 7, 6, 5), (16, 7, 3, 3), (1, 1), (0, 1, 2, 1)),     # asymmetric padding, batch 2
])
def test_conv2d_bf16_matches_emulation(x_shape, w_shape, strides, pads):
    rng = np.random.default_rng(sum(x_shape))
    x, w = rng.standard_normal(x_shape, np.float32), rng.standard_normal(w_shape, np.float32)
    b = rng.standard_normal(w_shape[0], np.float32)
    s, args = x86_bf16.conv2d_bf16(x_shape, w_shape, strides, pads)
    f = compiler.build(s, args, name="conv_bf16")
    out = np.zeros(args[-1].shape, np.float32)
    f(x, x86_bf16.pack_bf16_conv_weight(w), b, np.zeros(args[3].shape, np.int16), out)
    want = x86_bf16.bf16_conv_reference(x, w, strides, pads) + b[:, None, None]
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_conv2d_bf16_instruction_selection():
    s, args = x86_bf16.conv2d_bf16((1, 8, 6, 6), (16, 8, 3, 3), (1, 1), (1, 1, 1, 1))
    asm = compiler.build(s, args, target=SPR_BF16, name="k").assembly()
    lines = [ln for ln in asm.splitlines() if "vdpbf16ps" in ln]
    assert lines and all("zmm" in ln for ln in lines)


@pytest.mark.skipif(not HOST_BF16, reason="this CPU has no AVX512-BF16")
def test_bf16_mlp_cosine_to_fp32():
    # a small model: 256 -> 128 relu -> 10, bf16 layers against the fp32 numpy model
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 256), np.float32)
    w1, b1 = rng.standard_normal((128, 256), np.float32) / 16, rng.standard_normal(128, np.float32)
    w2, b2 = rng.standard_normal((10, 128), np.float32) / 11, rng.standard_normal(10, np.float32)
    ref = np.maximum(x @ w1.T + b1, 0) @ w2.T + b2
    got = _run_dense_bf16(np.maximum(_run_dense_bf16(x, w1, b1), 0), w2, b2)
    cos = float(got.ravel() @ ref.ravel() / np.linalg.norm(got) / np.linalg.norm(ref))
    assert cos >= 0.999 and not np.array_equal(got, ref)   # bf16 rounding, yet close


def _mnemonics(asm, names):
    return set(re.findall(r"\b(" + "|".join(names) + r")\b", asm))


def test_bf16_instruction_selection():
    s, args = x86_bf16.dense_bf16(2, 64, 32)
    asm = compiler.build(s, args, target=SPR_BF16, name="k").assembly()
    assert "vdpbf16ps" in asm and "zmm" in [ln for ln in asm.splitlines() if "vdpbf16ps" in ln][0]


@pytest.mark.parametrize("dtype,op", [("int8", "tdpbusd"), ("bfloat16", "tdpbf16ps")])
def test_amx_instruction_selection(dtype, op):
    s, args = x86_amx.dense_amx(32, 128, 32, dtype)
    asm = compiler.build(s, args, target=AMX, name="k").assembly()
    assert _mnemonics(asm, [op, "ldtilecfg", "tileloadd", "tilestored", "tilerelease"]) == {
        op, "ldtilecfg", "tileloadd", "tilestored", "tilerelease"}
    # the tile configuration is loaded once per kernel, not per tile product, and released
    # once before it returns
    count = {m: len(re.findall(rf"\s{m}\b", asm)) for m in (op, "ldtilecfg", "tilerelease")}
    assert count["ldtilecfg"] == count["tilerelease"] == 1 and count[op] >= 1


@pytest.mark.parametrize("dtype,op,kt,esize", [("int8", "tdpbusd", 64, 1),
                                               ("bfloat16", "tdpbf16ps", 32, 2)])
@pytest.mark.parametrize("strides", [(1, 1), (2, 2)])
def test_amx_conv_instruction_selection_and_tile_rows(dtype, op, kt, esize, strides):
    from compiler.tir.lowering import lower
    C = 2 * kt
    s, args = x86_amx.conv2d_amx((1, C, 18, 18), (32, C, 3, 3), strides, (1, 1, 1, 1), dtype)
    asm = compiler.build(s, args, target=AMX, name="k").assembly()
    assert _mnemonics(asm, [op, "ldtilecfg", "tileloadd", "tilestored", "tilerelease"]) == {
        op, "ldtilecfg", "tileloadd", "tilestored", "tilerelease"}
    # one tile configuration for the kernel's many tile products (the parallel body is an
    # outlined function of its own: it configures; the kernel releases before returning)
    count = {m: len(re.findall(rf"\s{m}\b", asm)) for m in (op, "ldtilecfg", "tilerelease")}
    assert count["ldtilecfg"] == 1 and count["tilerelease"] == 1 and count[op] > 1
    # the A tile's rows are adjacent output columns' pixels: C elements apart, in bytes, for
    # either stride (the input is stored split by stride phase)
    calls = re.findall(rf"x86\.amx\.{op}\((.*)\)", str(lower(s, args, name="k")))
    assert calls and all(c.endswith(f", {C * esize}") for c in calls)


def _conv_int64(x, w, strides, pads):
    pt, pl, pb, pr = pads
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    O, _, KH, KW = w.shape
    sh, sw = strides
    OH, OW = (xp.shape[2] - KH) // sh + 1, (xp.shape[3] - KW) // sw + 1
    out = np.zeros((x.shape[0], O, OH, OW), np.int64)
    for kh in range(KH):
        for kw in range(KW):
            win = xp[:, :, kh:kh + sh * (OH - 1) + 1:sh, kw:kw + sw * (OW - 1) + 1:sw]
            out += np.einsum("nchw,oc->nohw", win, w[:, :, kh, kw].astype(np.int64))
    return out


# the AMX conv's loop nest without the tile instruction (tensorize=False), run here: its
# layouts, padding, stride phases and channel / column tails against numpy
@pytest.mark.parametrize("x_shape,w_shape,strides,pads", [
    ((1, 20, 9, 11), (24, 20, 3, 3), (2, 2), (1, 1, 1, 1)),      # C, O, OW not whole tiles
    ((1, 70, 5, 17), (16, 70, 1, 1), (1, 1), (0, 0, 0, 0)),      # 1x1, OW 17: two column tiles
])
def test_amx_conv_emulation_int8_exact(x_shape, w_shape, strides, pads):
    rng = np.random.default_rng(sum(x_shape))
    x = rng.integers(-128, 128, x_shape).astype(np.int8)
    w = rng.integers(-128, 128, w_shape).astype(np.int8)
    s, args = x86_amx.conv2d_amx(x_shape, w_shape, strides, pads, "int8", tensorize=False)
    out = np.zeros(args[-1].shape, np.int32)
    compiler.build(s, args, name="k")(x, x86_amx.pack_amx_conv_weight(w, "int8"),
                                      np.zeros(args[2].shape, np.uint8), out)
    comp = 128 * w.astype(np.int64).reshape(w.shape[0], -1).sum(1)    # the +128 offset's
    np.testing.assert_array_equal(out, _conv_int64(x, w, strides, pads) + comp[:, None, None])


def test_amx_conv_emulation_bf16_matches_numpy():
    x_shape, w_shape, strides, pads = (1, 20, 9, 11), (24, 20, 3, 3), (2, 2), (1, 0, 1, 2)
    rng = np.random.default_rng(5)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    s, args = x86_amx.conv2d_amx(x_shape, w_shape, strides, pads, "bfloat16", tensorize=False)
    out = np.zeros(args[-1].shape, np.float32)
    compiler.build(s, args, name="k")(x, x86_amx.pack_amx_conv_weight(w, "bfloat16"),
                                      np.zeros(args[2].shape, np.int16), out)
    want = x86_bf16.bf16_conv_reference(x, w, strides, pads)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)


def test_amx_conv_errors():
    with pytest.raises(ValueError, match=r"AMX conv: activation channels 64 != weight "
                                         r"in-channels 32"):
        x86_amx.conv2d_amx((1, 64, 12, 12), (32, 32, 3, 3))
    with pytest.raises(ValueError, match=r"AMX conv dtype must be one of .*not 'fp8'"):
        x86_amx.conv2d_amx((1, 64, 12, 12), (32, 64, 3, 3), dtype="fp8")


def test_amx_shapes_must_be_whole_tiles():
    with pytest.raises(ValueError, match=r"M and N multiples of 16 and K of 64.*K=100"):
        x86_amx.dense_amx(16, 100, 16, "int8")
    with pytest.raises(ValueError, match="dtype must be one of"):
        x86_amx.dense_amx(16, 64, 16, "fp8")


def test_intrinsic_on_a_target_without_it_is_a_clear_error():
    s, args = x86_bf16.dense_bf16(2, 64, 32)
    with pytest.raises(ValueError, match=r"x86.vdpbf16ps needs CPU feature\(s\) \+avx512bf16, "
                                         r"which target .*skylake.* lacks; add -mattr"):
        compiler.build(s, args, target="llvm -mcpu=skylake -mattr=+avx2", name="k")
    with pytest.raises(ValueError, match=r"x86.amx.tdpbusd is an x86-64 instruction; target .* "
                                         r"is aarch64"):
        compiler.build(*x86_amx.dense_amx(16, 64, 16), target="aarch64", name="k")
