"""Grouped convolutions on the accelerator: groups of at least BLOCK_IN (16) input channels run as
one GEMM-core conv per group on an int8 slice of the input, joined by an int8 concat; the module
(tsim) is bit-exact with the quantized oracle and close to onnxruntime. Smaller groups stay on the
CPU in float."""
import numpy as np
import onnxruntime as ort
import pytest

from compiler import build_model
from compiler.quant import QOp, run as run_oracle
from driver.runtime import load_module
from tests.models.builders import OnnxBuilder, _io


def _model(groups, channels=32):
    """A stem conv (3 -> channels, on the CPU), then two grouped convs: 3x3 channels -> channels
    and 1x1 channels -> 2*channels, each with bias and relu."""
    b = OnnxBuilder(0)
    x = b.node("Relu", [b.conv("input", 3, channels, 3, bias=True)])
    x = b.node("Relu", [b.conv(x, channels, channels, 3, groups=groups, bias=True)])
    x = b.conv(x, channels, 2 * channels, 1, groups=groups, bias=True)
    return b.model([_io("input", [1, 3, 8, 8])], [_io(x, None)], 13)


def _calib(seed=1):
    return {"input": np.random.default_rng(seed).standard_normal((4, 3, 8, 8)).astype(np.float32)}


@pytest.mark.parametrize("per_channel", [False, True])
def test_groups_of_block_in_channels_run_on_the_gemm_core(per_channel, tmp_path):
    model = _model(groups=2)
    cm = build_model(model, target="vta", calib=_calib(), per_channel=per_channel)
    qg = cm.plan.qgraph
    convs = [(n.name, n.shape, n.target) for n in qg.nodes if n.op is QOp.CONV2D]
    assert convs == [("conv0", (1, 32, 8, 8), "cpu"),
                     ("conv1.group0", (1, 16, 8, 8), "vta"), ("conv1.group1", (1, 16, 8, 8), "vta"),
                     ("conv2.group0", (1, 32, 8, 8), "vta"), ("conv2.group1", (1, 32, 8, 8), "vta")]
    concats = [n for n in qg.nodes if n.op is QOp.INT8 and n.attrs["op"] == "CONCAT"]
    assert len(concats) == 2 and all(n.dtype == "int8" for n in concats)
    m = load_module(cm.save(str(tmp_path / "grouped.vtamod")), device="tsim")
    x = np.random.default_rng(2).standard_normal((1, 3, 8, 8)).astype(np.float32)
    (got,) = m(x)
    np.testing.assert_array_equal(got, run_oracle(qg, {"input": x})[0])
    (ref,) = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"input": x})
    cos = float(ref.ravel() @ got.ravel() / np.linalg.norm(ref) / np.linalg.norm(got))
    assert cos > 0.99, f"int8 grouped convs drift from fp32: cosine {cos:.4f}"


def test_groups_narrower_than_block_in_stay_on_the_cpu_in_float():
    cm = build_model(_model(groups=4), target="vta", calib=_calib())   # 8 channels a group
    qg = cm.plan.qgraph
    assert [n.name for n in qg.nodes if n.op is QOp.CONV2D] == ["conv0"]
    grouped = [n for n in qg.nodes if n.op is QOp.FLOAT and n.attrs["op"] == "CONV2D"]
    assert [n.attrs["attrs"]["groups"] for n in grouped] == [4, 4]
