"""Whole PyTorch models (tests/models/torch_nets.py: ResNet-18, MobileNetV2, a transformer
encoder) through torch.export and torch.compile(backend="vta") against torch eager (1e-4
relative), and through ONNX against torch.export: the same outputs (1e-5) and the same number
of conv, dense and matmul kernels after the graph passes.

CI runs the CNNs at 32x32 and the encoder at 16 tokens; ``-m slow`` adds 224x224 and 128.
"""
from __future__ import annotations

import collections
import io

import numpy as np
import pytest
import torch

from compiler import build_model
from compiler.build_model import import_model
from compiler.graph import optimize
from compiler.graph.ops import Op
from driver.runtime import load_module
from tests.models import torch_nets

HEAVY = (Op.CONV2D, Op.CONV2D_TRANSPOSE, Op.DENSE, Op.MATMUL)
CASES = [pytest.param(("resnet18", 32), id="resnet18-32"),
         pytest.param(("mobilenet_v2", 32), id="mobilenet_v2-32"),
         pytest.param(("encoder", 16), id="encoder-16"),
         pytest.param(("resnet18", 224), id="resnet18-224", marks=pytest.mark.slow),
         pytest.param(("mobilenet_v2", 224), id="mobilenet_v2-224", marks=pytest.mark.slow),
         pytest.param(("encoder", 128), id="encoder-128", marks=pytest.mark.slow)]


def _close(y, ref, rel):
    """Every element within ``rel`` of the largest magnitude of ``ref``."""
    err = float(np.abs(y - ref).max() / np.abs(ref).max())
    assert err <= rel, f"max error {err:.2e} of the largest |output| (limit {rel:.0e})"


@pytest.fixture(scope="module", params=CASES)
def case(request):
    """(model, input, eager output, imported (graph, params), the torch.export module's output);
    the import (torch.export + decomposition, most of the time here) is done once."""
    name, size = request.param
    model, x = torch_nets.make(name), torch_nets.example_input(name, size)
    with torch.no_grad():
        ref = model(x).numpy()
    graph, params = import_model(model, example_inputs=(x,))
    y, = load_module(build_model(graph, params=params))(x)
    return model, x, ref, (graph, params), y


def test_torch_export_matches_eager(case):
    _, _, ref, _, y = case
    _close(y, ref, 1e-4)


def test_torch_compile_matches_eager(case):
    from driver.torch_compile import STATS
    model, x, ref, _, _ = case
    torch._dynamo.reset()
    eager_before = sum(STATS["eager_ops"].values())
    with torch.no_grad():
        y = torch.compile(model, backend="vta")(x).numpy()
    _close(y, ref, 1e-4)
    assert sum(STATS["eager_ops"].values()) == eager_before    # every op compiled


def _heavy_kernels(graph, params) -> collections.Counter:
    """Conv/dense/matmul ops inside the fused groups that `optimize` leaves (one kernel each)."""
    opt = optimize(graph, params)
    return collections.Counter(b.op.name for n in opt.graph.nodes() if n.op is Op.FUSED
                               for b in n.attr("body").nodes() if b.op in HEAVY)


def test_onnx_and_torch_export_give_the_same_outputs_and_kernels(case):
    model, x, _, imported, y = case
    buf = io.BytesIO()
    torch.onnx.export(model, (x,), buf, dynamo=False, opset_version=17, input_names=["input"])
    proto = buf.getvalue()
    y_onnx, = load_module(build_model(proto))(x.numpy())
    _close(y_onnx, y, 1e-5)
    k_torch = _heavy_kernels(*imported)
    k_onnx = _heavy_kernels(*import_model(proto))
    assert k_torch == k_onnx and sum(k_torch.values()) > 0, (k_torch, k_onnx)
