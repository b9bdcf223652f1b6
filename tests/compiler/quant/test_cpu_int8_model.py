"""Whole models in int8 on the CPU: ``build_model(..., target="llvm", quantize="int8")``,
bit-exact to the quantized oracle (``compiler.quant.run``) on the int8 path the host has."""
import numpy as np
import pytest

from compiler import build_model
from compiler.codegen.llvm.target import host_target
from compiler.quant import run as run_oracle
from compiler.quant.kernels import select
from driver.runtime import load_module
from tests.models.builders import build_resnet18


def _digits():
    calib = np.load("examples/digits/calib.npz")["images"].astype(np.float32) * 0.0625
    x = np.load("examples/digits/heldout.npz")["images"][:16].astype(np.float32) * 0.0625
    return calib.reshape(-1, 1, 8, 8), x.reshape(16, 1, 8, 8)


def test_digits_int8_on_cpu_bit_exact():
    calib, x = _digits()
    cm = build_model("examples/digits/digits_cnn.onnx", target="llvm", quantize="int8",
                     input_shapes={"image": (16, 1, 8, 8)}, calib={"image": calib})
    assert cm.stats["int8_path"] == select(host_target().features).name
    assert not cm.plan.programs and {s.kind for s in cm.plan.steps} == {"cpu"}
    assert cm.targets == [str(host_target())]        # a CPU module: no accelerator device
    ops = {n.op.value for n in cm.plan.qgraph.nodes}
    assert {"conv2d", "dense"} <= ops
    got = load_module(cm)(x)[0]
    np.testing.assert_array_equal(got, run_oracle(cm.plan.qgraph, {"image": x})[0])


@pytest.mark.slow
def test_resnet18_int8_on_cpu_bit_exact():
    rng = np.random.default_rng(0)
    shape = (1, 3, 32, 32)
    cm = build_model(build_resnet18(size=32, seed=0), target="llvm", quantize="int8",
                     input_shapes={"input": shape},
                     calib={"input": rng.standard_normal((2,) + shape[1:])})
    x = rng.standard_normal(shape).astype(np.float32)
    np.testing.assert_array_equal(load_module(cm)(x)[0], run_oracle(cm.plan.qgraph, {"input": x})[0])


def test_quantize_option_errors():
    with pytest.raises(ValueError, match=r"quantize must be 'int8'.*not 'int4'"):
        build_model("examples/digits/digits_cnn.onnx", target="llvm", quantize="int4")
    with pytest.raises(ValueError, match=r"quantize='int8' builds graph-executor modules.*'aot'"):
        build_model("examples/digits/digits_cnn.onnx", target="llvm", quantize="int8",
                    executor="aot")
    with pytest.raises(ValueError, match=r"option\(s\) vthreads apply to target 'vta' only"):
        build_model("examples/digits/digits_cnn.onnx", target="llvm", quantize="int8", vthreads=2)
