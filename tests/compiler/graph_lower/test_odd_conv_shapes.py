"""Odd conv shapes. Output channels no vector block divides (21, 75, 255...) run on a
padded 16- or 8-channel block (``topi.conv2d.padded_out_block``): against onnxruntime at 1e-4,
and the padded block's other paths (Winograd, a weight computed in the graph) against
numpy. Convs under ``SERIAL_MACS`` default to one thread (``par_depth`` 0)."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from lowering_cases import Model, run_group
from onnx import TensorProto, helper

from compiler import build_model
from compiler.autotune.task import master_of
from compiler.codegen.llvm.target import host_target
from compiler.graph import Op, make
from compiler.topi import conv2d as tconv
from driver.runtime import load_module


def _conv_onnx(C, O, H, k, s, bias):
    rng = np.random.default_rng(O)
    inits = [onnx.numpy_helper.from_array(
        (rng.standard_normal((O, C, k, k)) * 0.1).astype(np.float32), "w")]
    if bias:
        inits.append(onnx.numpy_helper.from_array(rng.standard_normal(O).astype(np.float32), "b"))
    conv = helper.make_node("Conv", ["x", "w"] + (["b"] if bias else []), ["c"],
                            kernel_shape=[k, k], strides=[s, s], pads=[k // 2] * 4)
    relu = helper.make_node("Relu", ["c"], ["y"])
    g = helper.make_graph([conv, relu], "conv",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, H, H])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("C,O,H,k,s,bias", [
    (16, 255, 7, 1, 1, True),     # YOLO head: 1x1, 255 = 15 blocks of 16 + 15
    (8, 21, 9, 3, 1, False),
    (12, 75, 9, 3, 2, True),
    (24, 40, 6, 3, 1, False),     # 40: the divisor block 8, unchanged
    (6, 12, 5, 3, 1, True),       # 12 channels padded to one block of 16
])
def test_odd_channel_conv_matches_onnxruntime(tmp_path, C, O, H, k, s, bias):
    path = str(tmp_path / "conv.onnx")
    onnx.save(_conv_onnx(C, O, H, k, s, bias), path)
    x = np.random.default_rng(1).standard_normal((1, C, H, H)).astype(np.float32)
    m = load_module(build_model(path))
    m.set_input("x", x)
    m.run()
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    want = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = m.get_output(0)
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


def _group(o, const_weight=True):
    m = Model()
    x = m.input("x", (1, 8, 9, 9))
    w = m.param("w", (o, 8, 3, 3)) if const_weight else m.input("w", (o, 8, 3, 3))
    g, params = m.group(make(Op.RELU, make(Op.CONV2D, x, w, pads=(1, 1, 1, 1))))
    impl, work = master_of(g, host_target())
    return g, impl.space(work), params


@pytest.mark.parametrize("o,lanes,block", [
    (255, 8, 16), (75, 8, 16), (12, 8, 16),  # 8 pads as much: the wider block
    (21, 8, 8), (21, 16, 16),                # 24 channels, not 32, where 8 is a whole vector
    (24, 8, None), (40, 16, None), (6, 8, None)])
def test_padded_block_pads_least_and_fills_a_vector(o, lanes, block):
    assert tconv.padded_out_block(o, lanes) == block


@pytest.mark.parametrize("o,block", [(255, 16), (24, 8), (40, 8), (6, 1)])
def test_default_block_pads_only_where_no_vector_block_divides(o, block):
    assert _group(o)[1].default["conv_out_block"] == block


def test_default_block_of_21_channels_is_the_padded_block_of_the_host():
    lanes = host_target().vector_lanes(32)
    assert _group(21)[1].default["conv_out_block"] == tconv.padded_out_block(21, lanes)


def test_padded_block_with_winograd_matches_numpy():
    g, space, params = _group(21)
    run_group(g, params, config=space.point(algorithm="winograd2"))


def test_padded_block_with_a_computed_weight_matches_numpy():
    g, space, params = _group(21, const_weight=False)
    assert 21 % space.default["conv_out_block"] != 0          # a padded block
    run_group(g, params, config=space.default)


@pytest.mark.parametrize("c,o,h,par", [(8, 21, 9, 0), (64, 64, 7, 0), (64, 64, 14, 3)])
def test_small_convs_default_to_one_thread(c, o, h, par):
    m = Model()
    x = m.input("x", (1, c, h, h))
    g, params = m.group(make(Op.CONV2D, x, m.param("w", (o, c, 3, 3)), pads=(1, 1, 1, 1)))
    impl, work = master_of(g, host_target())
    space = impl.space(work)
    assert space.default["par_depth"] == par
    run_group(g, params, config=space.default)
