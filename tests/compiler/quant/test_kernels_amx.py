"""Int8 CONV2D on AMX tiles (``compiler/quant/kernels/amx.py``): the kernel's loop nest without the tile
instruction (``tensorize=False``) bit-exact to ``eval_node`` here, the tensorized one's
instruction selection in the assembly, and the choice of the ``amx`` int8 path."""
import re

import numpy as np
import pytest
from quant_kernel_run import run_kernel

import compiler
from compiler.codegen.llvm.target import parse_target
from compiler.quant import kernels
from compiler.quant.kernels import amx as kernels_amx
from compiler.quant.qgraph import QNode, QOp, eval_node

AMX = "llvm -mcpu=sapphirerapids"


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


@pytest.mark.parametrize("x_shape,O,k,stride,pad,shift,relu", [
    ((1, 16, 9, 9), 24, 3, 2, 1, 9, True),               # stride 2, O = 16 + 8, OW 5
    ((1, 70, 4, 17), 16, 1, 1, 0, (6, 7) * 8, False),     # C = 64 + 6, per-channel shifts
    ((2, 32, 6, 6), 16, 3, 1, 1, 31, False),              # batch 2, shift 31: -1 or 0
])
def test_amx_conv2d_emulation_bit_exact(rng, x_shape, O, k, stride, pad, shift, relu):
    node, x, w, b = _conv(rng, x_shape, O, k, stride, pad, shift, relu)
    got = run_kernel(kernels_amx.conv2d(node, x.shape, w, b, tensorize=False), x)
    np.testing.assert_array_equal(got, eval_node(node, [x], {"w": w, "b": b}))


def test_amx_conv2d_emulation_multiplier_and_wrap(rng):
    # every product -128 * -128 with biases near 2**31 (the int32 sum and the +128 offset's
    # compensation wrap alike), and a QDQ model's multiplier in the epilogue
    node, x, w, b = _conv(rng, (1, 16, 5, 5), 16, 3, 1, 1, 9, False)
    x[:], w[:] = -128, -128
    node.attrs.update(mult=23170, post=24)
    got = run_kernel(kernels_amx.conv2d(node, x.shape, w, b, tensorize=False), x)
    np.testing.assert_array_equal(got, eval_node(node, [x], {"w": w, "b": b}))


def _asm(kd):
    return compiler.build(kd.schedule, kd.args, target=AMX, name="k").assembly()


def test_amx_conv2d_instruction_selection(rng):
    node, x, w, b = _conv(rng, (1, 32, 8, 8), 32, 3, 1, 1, 9, True)
    asm = _asm(kernels_amx.conv2d(node, x.shape, w, b))
    count = {m: len(re.findall(rf"\s{m}\b", asm)) for m in ("tdpbusd", "ldtilecfg", "tilerelease")}
    assert count["tdpbusd"] >= 1 and count["ldtilecfg"] == 1 and count["tilerelease"] == 1


def test_few_input_channels_stay_on_vnni(rng):
    # a 3-channel stem would fill 3 of an A tile row's 64 bytes: VNNI takes it
    node, x, w, b = _conv(rng, (1, 3, 8, 8), 16, 3, 1, 1, 9, True)
    assert kernels_amx.MIN_CHANNELS > 3
    asm = _asm(kernels_amx.conv2d(node, x.shape, w, b))
    assert "vpdpbusd" in asm and "tdpbusd" not in asm


def test_select_picks_amx_for_an_amx_target():
    assert kernels.select(parse_target(AMX).features).name == "amx"
    assert kernels.select(parse_target("llvm -mcpu=icelake-server").features).name == "vnni512"
    amx = next(p for p in kernels.INT8_PATHS if p.name == "amx")
    assert amx.why_not("+avx512f,+avx512vnni,+amx-tile") == "target lacks +amx-int8"
