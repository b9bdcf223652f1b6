"""Int8 CONV2D / DENSE on VNNI (``compiler/quant/kernels/vnni.py``): bit-exact to ``eval_node`` where the
machine has VNNI, instruction selection in the assembly for the targets it lacks."""
import numpy as np
import pytest
from quant_kernel_run import run_kernel

import compiler
from compiler.codegen.llvm.target import host_target, parse_target
from compiler.quant import kernels
from compiler.quant.kernels import vnni
from compiler.quant.qgraph import QNode, QOp, eval_node
from compiler.topi import x86_int8

HOST_VNNI = x86_int8.vnni_lanes(host_target().features)
needs_vnni = pytest.mark.skipif(HOST_VNNI is None, reason="this CPU has no VNNI (assembly "
                                "tests below cover the path)")


def _conv(rng, x_shape, O, k, stride, pad, shift, relu):
    x = rng.integers(-128, 128, x_shape).astype(np.int8)
    w = rng.integers(-128, 128, (O, x_shape[1], k, k)).astype(np.int8)
    b = rng.integers(-2 ** 31, 2 ** 31 - 1, O, dtype=np.int64).astype(np.int32)
    oh = (x_shape[2] + 2 * pad - k) // stride + 1
    ow = (x_shape[3] + 2 * pad - k) // stride + 1
    node = QNode(QOp.CONV2D, (0,), (x_shape[0], O, oh, ow), "int8", 0,
                 {"strides": (stride, stride), "padding": (pad, pad), "shift": shift,
                  "relu": relu}, ("w", "b"))
    return node, x, w, b


@needs_vnni
@pytest.mark.parametrize("lanes", [16, 8])
@pytest.mark.parametrize("x_shape,O,k,stride,pad,shift,relu", [
    ((1, 3, 15, 15), 16, 7, 2, 3, 9, True),      # a stem: 3 channels padded to 4
    ((2, 8, 7, 7), 20, 3, 1, 1, (6, 7) * 10, False),   # per-channel shifts, 20 = 16 + 4
    ((1, 32, 6, 6), 32, 1, 1, 0, 31, False),     # 1x1, shift 31: -1 or 0
    ((1, 5, 9, 7), 8, 3, 2, 0, 0, True),         # 5 channels, no padding, shift 0
])
def test_vnni_conv2d_bit_exact(rng, lanes, x_shape, O, k, stride, pad, shift, relu):
    node, x, w, b = _conv(rng, x_shape, O, k, stride, pad, shift, relu)
    got = run_kernel(vnni.conv2d(node, x.shape, w, b, lanes=lanes), x)
    np.testing.assert_array_equal(got, eval_node(node, [x], {"w": w, "b": b}))


@needs_vnni
def test_vnni_conv2d_extremes_wrap(rng):
    # every product -128 * -128 and biases near 2**31: the int32 sum wraps, and the +128
    # offset's compensation must wrap the same way
    node, x, w, b = _conv(rng, (1, 16, 5, 5), 16, 3, 1, 1, 4, False)
    x[:], w[:] = -128, -128
    got = run_kernel(vnni.conv2d(node, x.shape, w, b), x)
    np.testing.assert_array_equal(got, eval_node(node, [x], {"w": w, "b": b}))


@needs_vnni
@pytest.mark.parametrize("lanes", [16, 8])
@pytest.mark.parametrize("M,C,O,shift,relu", [(1, 64, 10, 7, False), (3, 37, 33, (5,) * 33, True)])
def test_vnni_dense_bit_exact(rng, lanes, M, C, O, shift, relu):
    x = rng.integers(-128, 128, (M, C)).astype(np.int8)
    w = rng.integers(-128, 128, (O, C)).astype(np.int8)
    b = rng.integers(-2 ** 20, 2 ** 20, O).astype(np.int32)
    node = QNode(QOp.DENSE, (0,), (M, O), "int8", 0, {"shift": shift, "relu": relu}, ("w", "b"))
    got = run_kernel(vnni.dense(node, x.shape, w, b, lanes=lanes), x)
    np.testing.assert_array_equal(got, eval_node(node, [x], {"w": w, "b": b}))


def test_vnni_weight_interleave_and_compensation():
    w = np.arange(-60, 60, dtype=np.int8).reshape(20, 6)       # (O, C)
    packed, comp = x86_int8.pack_vnni_weight(w, 16)
    assert packed.shape == (2, 2, 16, 4)
    assert packed[1, 1, 3, 1] == w[19, 5]                       # o = 16 + 3, c = 4 + 1
    assert packed[1, 1, 4, 0] == 0 and packed[0, 1, 0, 2] == 0  # padded O and C read 0
    np.testing.assert_array_equal(comp, 128 * w.astype(np.int64).sum(1))


@pytest.mark.parametrize("features,path", [
    ("+avx2,+avx512f,+avx512vnni", "vnni512"),
    ("+avx2,+avxvnni", "vnni256"),
    ("+avx2,+fma", "plain"),
    ("", "plain"),
])
def test_select_follows_cpu_features(features, path):
    assert kernels.select(features).name == path


def _asm(kd, target):
    return compiler.build(kd.schedule, kd.args, target=target, name="k").assembly()


@pytest.mark.parametrize("target,lanes,register", [
    # features as -mattr: the choice reads the target's feature string (the manifest's)
    ("llvm -mcpu=sapphirerapids -mattr=+avx512f,+avx512bw,+avx512vl,+avx512vnni", 16, "zmm"),
    ("llvm -mcpu=alderlake -mattr=+avx2,+avxvnni", 8, "ymm"),   # AVX-VNNI: {vex} vpdpbusd
])
def test_vnni_instruction_selection(rng, target, lanes, register):
    tgt = parse_target(target)
    assert x86_int8.vnni_lanes(tgt.features) == lanes
    node, x, w, b = _conv(rng, (1, 8, 6, 6), 16, 3, 1, 1, 7, True)
    kd = kernels.cpu_kernel(node, [QNode(QOp.INPUT, (), x.shape, "int8", 0)],
                            {"w": w, "b": b}, "conv", tgt)
    asm = _asm(kd, tgt)
    lines = [ln for ln in asm.splitlines() if "vpdpbusd" in ln]
    assert lines and all(register in ln for ln in lines)


def test_vnni_accumulators_stay_in_registers(rng):
    """From the first vpdpbusd of a conv's inner loop (8-column ow tiles x 16 lanes,
    seven tiles per row) to the last, at most one tile's accumulators are stored (the
    copy-out that LLVM may interleave with the last vpdpbusds): they live in zmm registers
    for the whole reduction. Before, the 56-wide accumulator row was stored back to the
    stack after every vpdpbusd, and ResNet-18 ran 1.8x slower."""
    tgt = parse_target("llvm -mcpu=znver4")      # AVX512-VNNI, no AMX
    node, x, w, b = _conv(rng, (1, 64, 56, 56), 64, 3, 1, 1, 7, True)
    kd = kernels.cpu_kernel(node, [QNode(QOp.INPUT, (), x.shape, "int8", 0)],
                            {"w": w, "b": b}, "conv", tgt)
    body = [ln.split("#")[0].strip() for ln in _asm(kd, tgt).splitlines()]
    dots = [i for i, ln in enumerate(body) if ln.startswith("vpdpbusd")]
    assert len(dots) >= 8
    stores = [ln for ln in body[dots[0]:dots[-1]]
              if ln.startswith("vmov") and ln.endswith(")") and "%zmm" in ln]
    assert len(stores) <= 8, stores


def test_plain_path_without_vnni(rng):
    tgt = parse_target("llvm -mcpu=skylake")      # AVX2, no VNNI
    node, x, w, b = _conv(rng, (1, 8, 6, 6), 16, 3, 1, 1, 7, True)
    kd = kernels.cpu_kernel(node, [QNode(QOp.INPUT, (), x.shape, "int8", 0)],
                            {"w": w, "b": b}, "conv", tgt)
    assert "vpdpbusd" not in _asm(kd, tgt)


@needs_vnni
@pytest.mark.parametrize("mult", [23170, (9000, 31000) * 8])
def test_vnni_conv2d_multiplier_requant(rng, mult):
    # a QDQ model's scales (compiler.quant.qdq): shift so |acc >> shift| < 2**16, then the
    # multiplier and the rounding post shift, in the VNNI kernel's epilogue
    node, x, w, b = _conv(rng, (1, 16, 6, 6), 16, 3, 1, 1, 9, False)
    b[:] = rng.integers(-2 ** 20, 2 ** 20, 16)
    node.attrs.update(mult=mult, post=24)
    got = run_kernel(vnni.conv2d(node, x.shape, w, b), x)
    np.testing.assert_array_equal(got, eval_node(node, [x], {"w": w, "b": b}))
