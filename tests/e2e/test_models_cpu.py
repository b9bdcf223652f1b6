"""Whole models compiled for the CPU against onnxruntime.

* digits CNN (examples/digits): the same class as onnxruntime for every held-out image;
* ResNet-18 and MobileNetV2 (seeded random weights, 64x64 input to keep CI fast;
  bench/models_cpu.py runs 224x224) within 1e-4 relative of onnxruntime;
* one BERT-style encoder layer within 1e-4 relative.

Each model goes through the deployment path: compile, save the .vtamod folder,
load it with driver.runtime, run.
"""
from __future__ import annotations

import os

import numpy as np
import onnxruntime as ort
import pytest

from compiler.build_model import build_model
from driver.runtime import load_module
from tests.models import builders
from tests.models.oracle import assert_close, ort_run

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DIGITS = os.path.join(ROOT, "examples", "digits", "digits_cnn.onnx")
HELDOUT = os.path.join(ROOT, "examples", "digits", "heldout.npz")


def compile_and_load(model, tmp_path, name, **kw):
    path = build_model(model, **kw).save(str(tmp_path / f"{name}.vtamod"))
    return load_module(path)


def test_digits_same_class_as_onnxruntime_on_every_heldout_image(tmp_path):
    m = compile_and_load(DIGITS, tmp_path, "digits")
    data = np.load(HELDOUT)
    images = data["images"].astype("float32")[:, None] / 16.0
    sess = ort.InferenceSession(DIGITS, providers=["CPUExecutionProvider"])
    ref = sess.run(None, {"image": images})[0]
    ours = np.concatenate([m(img[None])[0] for img in images])
    assert ours.shape == ref.shape == (359, 10)
    np.testing.assert_array_equal(ours.argmax(1), ref.argmax(1))
    assert_close(ours, ref, rel=1e-4, what="digits logits")
    assert (ours.argmax(1) == data["labels"]).sum() == 353      # 98.33 %, as the README says


@pytest.mark.parametrize("name,build", [("resnet18", builders.build_resnet18),
                                        ("mobilenet_v2", builders.build_mobilenet_v2)])
def test_cnn_within_1e4_of_onnxruntime(tmp_path, name, build):
    model = build(64)
    m = compile_and_load(model, tmp_path, name)
    (iname, shape, dtype), = m.input_info()
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    ours = m(x)[0]
    assert_close(ours, ort_run(model, {iname: x})[0], rel=1e-4, what=name)


def test_bert_layer_within_1e4_of_onnxruntime(tmp_path):
    model = builders.build_bert_layer()
    m = compile_and_load(model, tmp_path, "bert")
    rng = np.random.default_rng(0)
    feeds = {n: rng.standard_normal(s).astype(d) for n, s, d in m.input_info()}
    ours = m(**feeds)[0]
    assert_close(ours, ort_run(model, feeds)[0], rel=1e-4, what="bert layer")
