"""Conv algorithms through the whole CPU route: every 3x3 stride-1 conv of ResNet-18 (seeded
random weights, 32x32 input to keep CI fast; bench/winograd.py runs 224x224) forced to
direct or F(4x4,3x3) by a pinned log, within 1e-4 relative of onnxruntime. The untuned
build at 32x32 runs F(2x2,3x3) on them on 512-bit targets, F(4x4,3x3) on 256-bit ones
(tests/e2e/test_models_cpu.py checks it)."""
from __future__ import annotations

import numpy as np
import pytest

from compiler.autotune.pin import pin_log
from compiler.build_model import build_model
from driver.runtime import load_module
from tests.models import builders
from tests.models.oracle import assert_close, ort_run


@pytest.mark.parametrize("algorithm", [
    "direct",
    # F(4x4,3x3): ~23 s (its unrolled transforms); the topi test covers it small
    pytest.param("winograd4", marks=pytest.mark.slow)])
def test_resnet18_with_pinned_algorithm_within_1e4_of_onnxruntime(tmp_path, monkeypatch,
                                                                  algorithm):
    # only the pinned log: a shipped log of this machine may cover the dense layer too
    monkeypatch.setattr("compiler.autotune.apply.SHIPPED_DIR", tmp_path / "no_shipped_logs")
    model = builders.build_resnet18(32)
    log = tmp_path / "pinned.jsonl"
    # the 3x3 stride-1 conv workloads: one per stage (64, 128, 256, 512 channels)
    assert pin_log(model, log, algorithm=algorithm) == 4
    cm = build_model(model, tuning_log=str(log))
    assert cm.stats["tuning"]["covered"] == 4
    m = load_module(cm)
    (iname, shape, dtype), = m.input_info()
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    assert_close(m(x)[0], ort_run(model, {iname: x})[0], rel=1e-4, what=f"resnet18 {algorithm}")


def _conv(c, h, k, stride):
    from onnx import TensorProto, helper, numpy_helper
    w = np.zeros((c, c, k, k), np.float32)
    node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[k, k],
                            strides=[stride, stride], pads=[k // 2] * 4)
    g = helper.make_graph([node], "conv", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [1, c, h, h])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, None)], [numpy_helper.from_array(w, "w")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("k,stride,offered", [(3, 1, True), (3, 2, False), (1, 1, False)])
def test_winograd_is_offered_for_3x3_stride1_convs_only(tmp_path, k, stride, offered):
    from compiler.autotune import extract_tasks
    (task,) = extract_tasks(_conv(64, 14, k, stride))
    knobs = {kn.name: kn for kn in task.space.knobs}
    algorithms = knobs["algorithm"].candidates if "algorithm" in knobs else ()
    assert ("winograd2" in algorithms) == offered


#: the targets the defaults were measured on (512-bit: znver4; 256-bit: AVX2), fixed so
#: that the table holds on any build machine
AVX512, AVX2 = "llvm -mcpu=znver4", "llvm -mcpu=haswell"


@pytest.mark.parametrize("target,c,h,default", [
    (AVX512, 64, 56, "winograd4"), (AVX512, 128, 28, "winograd4"),
    (AVX512, 256, 14, "winograd2"), (AVX512, 512, 7, "winograd2"),
    # 256-bit: F(4x4,3x3) is faster at every size (conv.WINOGRAD_DEFAULTS)
    (AVX2, 256, 14, "winograd4"), (AVX2, 512, 7, "winograd4"),
    # below 64 channels: F(4x4,3x3) on 256-bit from 16 channels; 512-bit not measured
    (AVX512, 32, 56, "direct"), (AVX2, 32, 56, "winograd4"), (AVX2, 24, 56, "winograd4"),
    (AVX2, 8, 56, "direct")])
def test_untuned_algorithm_is_chosen_per_shape(target, c, h, default):
    from compiler.autotune import extract_tasks
    (task,) = extract_tasks(_conv(c, h, 3, 1), target)
    assert {kn.name: kn.default for kn in task.space.knobs}["algorithm"] == default


@pytest.mark.parametrize("target,point", [
    # 512-bit: 16 channels, 7 tiles x 2 blocks = 14 zmm accumulators
    (AVX512, (16, 14)),
    # 256-bit, 16 ymm: 8 channels, 4 tiles x 2 blocks = 8 ymm (16 x 14 would need 28)
    (AVX2, (8, 8)),
    ("llvm -mcpu=x86-64", None)])         # 128-bit: not measured, stays direct
def test_untuned_winograd_point_fits_the_vector_registers(target, point):
    from compiler.autotune import extract_tasks
    (task,) = extract_tasks(_conv(128, 28, 3, 1), target)
    d = {kn.name: kn.default for kn in task.space.knobs}
    if point is None:
        assert d["algorithm"] == "direct"
    else:
        assert (d["algorithm"], d["conv_out_block"], d["ow_tile"]) == ("winograd4", *point)


def test_an_untuned_conv_of_few_channels_is_winograd_on_avx2_within_1e4(tmp_path, monkeypatch):
    """24 -> 21 channels, 3x3 stride 1, random weights: the untuned 256-bit default is
    F(4x4,3x3) (padded output block); its output stays within 1e-4 of onnxruntime."""
    from onnx import TensorProto, helper, numpy_helper

    from compiler.autotune import extract_tasks
    monkeypatch.setattr("compiler.autotune.apply.SHIPPED_DIR", tmp_path / "no_shipped_logs")
    rng = np.random.default_rng(0)
    w = rng.standard_normal((21, 24, 3, 3)).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3], pads=[1] * 4)
    g = helper.make_graph([node], "conv", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [1, 24, 20, 20])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, None)], [numpy_helper.from_array(w, "w")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    (task,) = extract_tasks(model, AVX2)
    assert {kn.name: kn.default for kn in task.space.knobs}["algorithm"] == "winograd4"
    m = load_module(build_model(model, target=AVX2))
    x = rng.standard_normal((1, 24, 20, 20)).astype(np.float32)
    assert_close(m(x)[0], ort_run(model, {"x": x})[0], rel=1e-4, what="24 -> 21 channels F(4x4,3x3)")
