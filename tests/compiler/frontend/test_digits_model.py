"""The committed digits CNN (examples/digits): the graph reference executor predicts the same
class as onnxruntime for every held-out image, before and after optimization."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from compiler.frontend import FrontendError
from compiler.frontend.onnx import from_onnx
from compiler.graph import Op, optimize, run
from tests.models.oracle import ort_run

DIGITS = Path(__file__).resolve().parents[3] / "examples" / "digits"
MODEL = DIGITS / "digits_cnn.onnx"


@pytest.fixture(scope="module")
def heldout():
    data = np.load(DIGITS / "heldout.npz")
    images = data["images"].astype(np.float32)[:, None] / 16.0
    return data["indices"], images, data["labels"]


def test_model_file_is_small():
    assert MODEL.stat().st_size < 200 * 1024


def test_heldout_set_matches_sklearn(heldout):
    from sklearn.datasets import load_digits
    indices, images, labels = heldout
    digits = load_digits()
    assert len(indices) == 359 and len(set(indices.tolist())) == 359
    np.testing.assert_array_equal(digits.images[indices].astype(np.float32)[:, None] / 16.0, images)
    np.testing.assert_array_equal(digits.target[indices], labels)


def test_dynamic_batch_needs_input_shape():
    with pytest.raises(FrontendError, match="input 'image' has dynamic shape batchx1x8x8"):
        from_onnx(MODEL)


def test_every_heldout_prediction_matches_onnxruntime(heldout):
    _, images, labels = heldout
    n = len(images)
    graph, params = from_onnx(MODEL, input_shapes={"image": (n, 1, 8, 8)})
    expected = ort_run(onnx.load(MODEL), {"image": images})[0]
    ref_pred = expected.argmax(1)
    logits = run(graph, params, {"image": images})[0]
    np.testing.assert_array_equal(logits.argmax(1), ref_pred)
    opt = optimize(graph, params, layout_block=8)
    opt_logits = run(opt.graph, opt.params, {"image": images})[0]
    np.testing.assert_array_equal(opt_logits.argmax(1), ref_pred)
    assert np.abs(opt_logits - expected).max() <= 1e-4 * np.abs(expected).max()
    assert [n.attr("name") for n in opt.graph.nodes() if n.op is Op.FUSED] == \
        ["fused_conv2d_add_relu",  # conv1 (1 in-channel stays NCHW)
         "fused_layout_transform",  # re-laid out for conv2 (a transform is a kernel of its own)
         "fused_conv2d_add_relu",  # blocked conv2
         "fused_layout_transform_reshape",  # back to NCHW, flatten
         "fused_dense_add"]
    accuracy = float((ref_pred == labels).mean())
    assert accuracy >= 0.97, f"held-out accuracy {accuracy:.4f}; retrain with examples/digits/train.py"
