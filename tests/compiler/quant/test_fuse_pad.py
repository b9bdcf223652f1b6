"""``fuse_pad.fuse_pads`` (a zero-point PAD folded into the CPU convs that read it) and the
conv kernels' ``pad_zp`` padding: the same integers as the PAD then the unpadded conv."""
import dataclasses

import numpy as np
import pytest
from quant_kernel_run import run_kernel

from compiler.codegen.llvm.target import host_target
from compiler.quant import kernels
from compiler.quant.kernels import vnni
from compiler.quant.fuse_pad import fuse_pads
from compiler.quant.qgraph import QGraph, QNode, QOp, eval_node, run
from compiler.topi import x86_int8

ZP = -37    # a uint8 input at zero point 91, as int8 levels


def _pad(src, shape, ph, pw, value=ZP, name="conv.pad"):
    return QNode(QOp.INT8, (src,), shape[:2] + (shape[2] + 2 * ph, shape[3] + 2 * pw), "int8",
                 4, {"op": "PAD", "attrs": {"pads": (0, 0, ph, pw, 0, 0, ph, pw),
                                            "mode": "constant", "value": value}},
                 name=name, zp=ZP)


def _graph(rng, extra_reader=False):
    """input -> quantize (zp ZP) -> PAD 1 -> conv 3x3 [-> and a RELU of the PAD]."""
    w = rng.integers(-128, 128, (8, 3, 3, 3)).astype(np.int8)
    b = rng.integers(-5000, 5000, 8).astype(np.int32)
    nodes = [QNode(QOp.INPUT, (), (1, 3, 6, 7), "float32", name="x"),
             QNode(QOp.QUANTIZE, (0,), (1, 3, 6, 7), "int8", 4, name="q", zp=ZP),
             _pad(1, (1, 3, 6, 7), 1, 1),
             QNode(QOp.CONV2D, (2,), (1, 8, 6, 7), "int8", None,
                   {"strides": (1, 1), "padding": (0, 0), "shift": 0, "relu": True,
                    "fscale": 0.0021}, ("w", "b"), name="conv", zp=-128)]
    outputs = [3]
    if extra_reader:
        nodes.append(QNode(QOp.INT8, (2,), nodes[2].shape, "int8", 4,
                           {"op": "RELU", "attrs": {}}, name="relu", zp=ZP))
        outputs.append(4)
    return QGraph(nodes, [0], outputs, [f"y{i}" for i in range(len(outputs))],
                  {"w": w, "b": b})


def test_the_pad_folds_into_the_conv_and_the_values_stay(rng):
    qg = _graph(rng)
    fused = fuse_pads(qg)
    assert [n.op for n in fused.nodes] == [QOp.INPUT, QOp.QUANTIZE, QOp.CONV2D]
    conv = fused.nodes[2]
    assert conv.src == (1,) and conv.attrs["padding"] == (1, 1) and conv.attrs["pad_zp"] == ZP
    x = {"x": rng.standard_normal((1, 3, 6, 7)).astype(np.float32) * 4}
    np.testing.assert_array_equal(run(fused, x)[0], run(qg, x)[0])


def test_a_pad_read_by_anything_but_a_conv_stays(rng):
    qg = _graph(rng, extra_reader=True)
    assert [n.op for n in fuse_pads(qg).nodes] == [n.op for n in qg.nodes]


@pytest.mark.parametrize("stride,folds", [(1, True), (2, False)])
def test_a_depthwise_takes_the_pad_at_stride_1_only(rng, stride, folds):
    """A strided DEPTHWISE keeps its PAD (its phase copy with borders was slower)."""
    o = (6 + 2 - 3) // stride + 1
    w = rng.integers(-128, 128, (3, 1, 3, 3)).astype(np.int8)
    nodes = [QNode(QOp.INPUT, (), (1, 3, 6, 6), "int8", 4, name="x", zp=ZP),
             _pad(0, (1, 3, 6, 6), 1, 1),
             QNode(QOp.DEPTHWISE, (1,), (1, 3, o, o), "int8", None,
                   {"strides": (stride, stride), "padding": (0, 0), "relu": False,
                    "shift": 0, "fscale": 0.01}, ("w", "b"), name="dw", zp=0)]
    qg = QGraph(nodes, [0], [2], ["y"], {"w": w, "b": np.zeros(3, np.int32)})
    fused = fuse_pads(qg)
    assert (len(fused.nodes) == 2) == folds
    x = {"x": rng.integers(-128, 128, (1, 3, 6, 6)).astype(np.int8)}
    np.testing.assert_array_equal(run(fused, x)[0], run(qg, x)[0])


def _conv(rng, x_shape, O, k, stride, pad):
    x = rng.integers(-128, 128, x_shape).astype(np.int8)
    w = rng.integers(-128, 128, (O, x_shape[1], k, k)).astype(np.int8)
    b = rng.integers(-2 ** 20, 2 ** 20, O).astype(np.int32)
    oh = (x_shape[2] + 2 * pad - k) // stride + 1
    ow = (x_shape[3] + 2 * pad - k) // stride + 1
    node = QNode(QOp.CONV2D, (0,), (x_shape[0], O, oh, ow), "int8", 0,
                 {"strides": (stride, stride), "padding": (pad, pad), "shift": 0, "relu": False,
                  "fscale": 0.0007, "pad_zp": ZP}, ("w", "b"), zp=3)
    return node, x, w, b


CONVS = [((1, 3, 15, 15), 16, 7, 2, 3), ((1, 8, 7, 7), 20, 3, 1, 1)]   # a stem; 3x3, 20 = 16+4


@pytest.mark.parametrize("x_shape,O,k,stride,pad", CONVS, ids=["stem", "3x3"])
def test_kernels_pad_with_the_zero_point(rng, x_shape, O, k, stride, pad):
    """eval_node pads with ZP explicitly; the plain kernel and, where the CPU has it, the
    VNNI one at each width agree with it bit for bit (padding with 0 would not)."""
    node, x, w, b = _conv(rng, x_shape, O, k, stride, pad)
    want = eval_node(node, [x], {"w": w, "b": b})
    plain = {k_: v for k_, v in node.attrs.items() if k_ != "pad_zp"}
    zero_padded = eval_node(dataclasses.replace(node, attrs=plain), [x], {"w": w, "b": b})
    assert not np.array_equal(want, zero_padded)
    builds = [lambda: kernels.conv2d(node, x.shape, w, b)]
    lanes = x86_int8.vnni_lanes(host_target().features)
    builds += [lambda n=n: vnni.conv2d(node, x.shape, w, b, lanes=n)
               for n in (16, 8) if lanes and n <= lanes]
    for build in builds:
        np.testing.assert_array_equal(run_kernel(build(), x), want)


@pytest.mark.parametrize("stride", [1, 2])
def test_depthwise_pads_with_the_zero_point(rng, stride):
    """The DEPTHWISE kernel (stride 2: the column-phase copy) with ``pad_zp``, as eval_node."""
    x = rng.integers(-128, 128, (1, 16, 9, 9)).astype(np.int8)
    w = rng.integers(-128, 128, (16, 1, 3, 3)).astype(np.int8)
    b = rng.integers(-4000, 4000, 16).astype(np.int32)
    o = (9 + 2 - 3) // stride + 1
    node = QNode(QOp.DEPTHWISE, (0,), (1, 16, o, o), "int8", None,
                 {"strides": (stride, stride), "padding": (1, 1), "relu": False, "shift": 0,
                  "fscale": 0.004, "pad_zp": ZP}, ("w", "b"), zp=-2)
    want = eval_node(node, [x], {"w": w, "b": b})
    plain = {k: v for k, v in node.attrs.items() if k != "pad_zp"}
    assert not np.array_equal(want, eval_node(dataclasses.replace(node, attrs=plain), [x],
                                              {"w": w, "b": b}))
    np.testing.assert_array_equal(run_kernel(kernels.depthwise(node, x.shape, w, b), x), want)
