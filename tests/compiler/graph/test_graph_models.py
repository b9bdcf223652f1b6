"""Whole models: every pass of the pipeline preserves outputs against onnxruntime (1e-4 relative).

ResNet-18 and MobileNetV2 come from tests/models/builders.py with seeded
random weights and BatchNorm (so batch-norm folding runs); the BERT-style
encoder layer exercises MatMul, LayerNormalization, Softmax, Gelu, residuals.
"""

from __future__ import annotations

import numpy as np
import pytest

from compiler.frontend.onnx import from_onnx
from compiler.graph import Op, optimize, run
from tests.models.builders import build_bert_layer, build_mobilenet_v2, build_resnet18
from tests.models.oracle import assert_close, ort_run


def _check_every_pass(model, shape, layout_block=None):
    x = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
    expected = ort_run(model, {"input": x})[0]
    graph, params = from_onnx(model)
    assert_close(run(graph, params, {"input": x})[0], expected, what="imported")
    checked = []

    def check(name, g, p):
        assert_close(run(g, p, {"input": x})[0], expected, what=f"after {name}")
        checked.append(name)

    result = optimize(graph, params, layout_block=layout_block, on_pass=check)
    assert checked == list(result.passes)
    return graph, result


def test_resnet18_every_pass_matches_onnxruntime():
    graph, res = _check_every_pass(build_resnet18(size=64), (1, 3, 64, 64), layout_block=16)
    assert sum(n.op is Op.BATCH_NORM for n in graph.nodes()) == 20
    fused = [n for n in res.graph.nodes() if n.op is Op.FUSED]
    bodies = [n.attr("body") for n in fused]
    assert not any(m.op is Op.BATCH_NORM for b in bodies for m in b.nodes())
    # every conv after the stem runs blocked; the stem (3 input channels) stays NCHW
    convs = [m for b in bodies for m in b.nodes() if m.op is Op.CONV2D]
    assert len(convs) == 20 and sum(c.attr("data_layout", "NCHW") == "NCHW16c" for c in convs) == 19
    assert res.memory_plan.planned_bytes < res.memory_plan.unplanned_bytes


def test_mobilenet_v2_every_pass_matches_onnxruntime():
    graph, res = _check_every_pass(build_mobilenet_v2(size=64), (1, 3, 64, 64), layout_block=8)
    names = {n.attr("name") for n in res.graph.nodes() if n.op is Op.FUSED}
    assert "fused_conv2d_add_clip" in names          # conv + folded-BN bias + ReLU6
    assert "fused_conv2d_add_add" in names           # projection conv + bias + residual


def test_bert_layer_every_pass_matches_onnxruntime():
    graph, res = _check_every_pass(build_bert_layer(), (1, 32, 256))
    ops = {n.op for n in graph.nodes()}
    assert {Op.MATMUL, Op.DENSE, Op.LAYER_NORM, Op.SOFTMAX, Op.GELU} <= ops


@pytest.mark.parametrize("build", [build_resnet18, build_mobilenet_v2], ids=["resnet18", "mobilenet_v2"])
def test_224_optimized_matches_onnxruntime_and_plans_memory(build):
    model = build(size=224)
    graph, params = from_onnx(model)
    res = optimize(graph, params, layout_block=16)
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    assert_close(run(res.graph, res.params, {"input": x})[0], ort_run(model, {"input": x})[0])
    plan = res.memory_plan
    # ResNet-18, batch 1, float32, fused: 12.35 MB unplanned -> 4.82 MB planned (peak live 4.01 MB);
    # MobileNetV2: 26.7 MB -> 8.4 MB (peak live 6.0 MB)
    assert plan.unplanned_bytes > 2 * plan.planned_bytes
    assert plan.peak_live_bytes <= plan.planned_bytes
    unfused = optimize(graph, params, fuse=False).memory_plan
    assert unfused.unplanned_bytes > plan.unplanned_bytes
