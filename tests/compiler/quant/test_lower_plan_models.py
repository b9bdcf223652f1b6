"""Whole accelerator models through ``lower_plan`` and ``driver.runtime.load_module`` on fsim
and tsim, bit-equal to the quantized oracle (``compiler.quant.run``): digits (calibrated
as the Makefile's demo), ResNet-18 at 32x32 (``tests/models/builders.py``; stem conv,
max pool, mean and dequantize on the CPU, 19 convs, 8 residual adds and the dense on the
accelerator) and the small U-Net (int8 nearest resize, a float concat between
dequantize and quantize, one output listed twice)."""
import numpy as np
import pytest

from compiler.frontend.onnx import from_onnx
from compiler.quant import build_plan, quantize, run as run_oracle
from compiler.quant.lower_plan import lower_plan
from driver.runtime import load_module
from tests.models.builders import build_resnet18, build_upsample_concat
from vta_hw.config import load_config


@pytest.fixture(scope="module")
def digits():
    calib = np.load("examples/digits/calib.npz")["images"].astype(np.float32) * 0.0625
    g, p = from_onnx("examples/digits/digits_cnn.onnx", input_shapes={"image": (120, 1, 8, 8)})
    plan = build_plan(quantize(g, p, {"image": calib.reshape(-1, 1, 8, 8)}), load_config())
    x = np.load("examples/digits/heldout.npz")["images"][:120].astype(np.float32) * 0.0625
    return plan, lower_plan(plan), x.reshape(120, 1, 8, 8)


@pytest.fixture(scope="module")
def resnet18():
    shape = (1, 3, 32, 32)
    rng = np.random.default_rng(0)
    g, p = from_onnx(build_resnet18(size=32, seed=0), input_shapes={"input": shape})
    plan = build_plan(quantize(g, p, {"input": rng.standard_normal((2,) + shape[1:])}), load_config())
    return plan, lower_plan(plan), rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("device", ["fsim", "tsim"])
def test_digits(digits, device):
    plan, cm, x = digits
    np.testing.assert_array_equal(load_module(cm, device=device)(x)[0],
                                  run_oracle(plan.qgraph, {"image": x})[0])


@pytest.mark.parametrize("device", ["fsim", "tsim"])
def test_resnet18(resnet18, device):
    plan, cm, x = resnet18
    cpu = [s for s in plan.steps if s.kind == "cpu"]
    assert {plan.qgraph.nodes[s.node].op.value for s in cpu} >= {"quantize", "conv2d", "mean"}
    np.testing.assert_array_equal(load_module(cm, device=device)(x)[0],
                                  run_oracle(plan.qgraph, {"input": x})[0])


@pytest.mark.parametrize("device", ["fsim", "tsim"])
def test_upsample_concat(device):
    rng = np.random.default_rng(0)
    g, p = from_onnx(build_upsample_concat(size=16), input_shapes={"input": (1, 3, 16, 16)})
    plan = build_plan(quantize(g, p, {"input": rng.standard_normal((4, 3, 16, 16))}), load_config())
    cpu_ops = {plan.qgraph.nodes[s.node].attrs.get("op") for s in plan.steps if s.kind == "cpu"}
    assert {"RESIZE", "CONCAT"} <= cpu_ops
    x = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
    got = load_module(lower_plan(plan), device=device)(x)
    want = run_oracle(plan.qgraph, {"input": x})
    assert len(got) == len(want) == 2
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
