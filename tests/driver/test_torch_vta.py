"""A PyTorch model on the accelerator, end to end: the digits CNN defined in torch
(tests/models/torch_nets.py, with the trained weights of examples/digits/digits_cnn.onnx),
exported, calibrated on training images, compiled for target="vta" and run on the cycle
simulator (tsim): bit-exact to the quantized oracle, held-out accuracy within a point of float.
"""
from __future__ import annotations

import numpy as np
import torch

from compiler import build_model
from compiler.quant import run as run_oracle
from driver.runtime import load_module
from tests.models.torch_nets import DigitsCNN, load_digits_weights

ONNX = "examples/digits/digits_cnn.onnx"
FLOAT_ACCURACY = 0.9833  # examples/digits/README.md
BATCH = 120


def test_torch_digits_cnn_on_the_cycle_simulator():
    model = load_digits_weights(DigitsCNN(), ONNX)
    calib = np.load("examples/digits/calib.npz")["images"].astype(np.float32) / 16
    held = np.load("examples/digits/heldout.npz")
    x = (held["images"].astype(np.float32) / 16).reshape(-1, 1, 8, 8)
    with torch.no_grad():
        float_acc = (model(torch.from_numpy(x)).argmax(1).numpy() == held["labels"]).mean()
    assert float_acc >= FLOAT_ACCURACY - 1e-4          # the torch model is the trained one
    cm = build_model(model, example_inputs=(torch.zeros(BATCH, 1, 8, 8),), target="vta",
                     calib={"x": calib.reshape(-1, 1, 8, 8)})
    m = load_module(cm, device="tsim")
    preds = []
    for k in range(0, len(x), BATCH):
        xb = x[np.arange(k, k + BATCH) % len(x)]
        out = m(torch.from_numpy(xb))[0]
        np.testing.assert_array_equal(out, run_oracle(cm.plan.qgraph, {"x": xb})[0])
        preds.append(out.argmax(1)[:min(BATCH, len(x) - k)])
    acc = (np.concatenate(preds) == held["labels"]).mean()
    assert acc >= FLOAT_ACCURACY - 0.01, acc
    st = m.stats()
    assert st["device"] == "tsim" and st["cycles"] > 0 and st["runs"] == 6
    assert len(st["layers"]) == 2        # conv2 and the linear layer ran on the accelerator
