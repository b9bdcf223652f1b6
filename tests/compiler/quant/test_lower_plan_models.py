"""Whole accelerator models through ``lower_plan`` on fsim and tsim, bit-equal to the
quantized oracle (``compiler.quant.run``): digits (calibrated as the Makefile's demo)
and ResNet-18 at 32x32 (``tests/models/builders.py``; stem conv, max pool, mean and
dequantize on the CPU, 20 convs, 8 residual adds and the dense on the accelerator)."""
import numpy as np
import pytest
from plan_runner import run_module

from compiler.frontend.onnx import from_onnx
from compiler.quant import build_plan, load_calibration, quantize, run as run_oracle
from compiler.quant.lower_plan import lower_plan
from tests.models.builders import build_resnet18
from vta_hw.config import load_config


@pytest.fixture(scope="module")
def digits():
    calib = load_calibration("examples/digits/calib.npz", "image", 0.0625)
    g, p = from_onnx("examples/digits/digits_cnn.onnx", input_shapes={"image": (120, 1, 8, 8)})
    plan = build_plan(quantize(g, p, {"image": calib["image"].reshape(-1, 1, 8, 8)}), load_config())
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
    np.testing.assert_array_equal(run_module(cm, [x], device)[0],
                                  run_oracle(plan.qgraph, {"image": x})[0])


@pytest.mark.parametrize("device", ["fsim", "tsim"])
def test_resnet18(resnet18, device):
    plan, cm, x = resnet18
    cpu = [s for s in plan.steps if s.kind == "cpu"]
    assert {plan.qgraph.nodes[s.node].op.value for s in cpu} >= {"quantize", "conv2d", "mean"}
    np.testing.assert_array_equal(run_module(cm, [x], device)[0],
                                  run_oracle(plan.qgraph, {"input": x})[0])
