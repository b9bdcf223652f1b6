"""``build_model(..., dtype="bfloat16")``: dense layers and convolutions in bf16 (vdpbf16ps,
fp32 accumulation, weights packed to bf16 at compile time) within cosine 0.999 of fp32; a
plain build never uses bf16."""
import shutil
import subprocess

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler import build_model
from compiler.codegen.llvm.target import host_target
from driver.runtime import load_module

HOST_BF16 = "+avx512bf16" in host_target().features.split(",")


def _mlp(rng):
    """x [4, 256] -> Gemm 128 -> Relu -> Gemm 16."""
    w1 = (rng.standard_normal((128, 256)) / 16).astype(np.float32)
    w2 = (rng.standard_normal((16, 128)) / 11).astype(np.float32)
    b1, b2 = rng.standard_normal(128).astype(np.float32), rng.standard_normal(16).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1),
         helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("Gemm", ["r", "w2", "b2"], ["y"], transB=1)], "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])],
        [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))])
    ref = lambda x: np.maximum(x @ w1.T + b1, 0) @ w2.T + b2  # noqa: E731
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), ref


def _uses(cm, mnemonic, tmp_path) -> bool:
    so = tmp_path / "kernels.so"
    so.write_bytes(cm.files["kernels.so"])
    return mnemonic in subprocess.run(["objdump", "-d", str(so)], capture_output=True,
                                      text=True, check=True).stdout


@pytest.mark.skipif(not HOST_BF16, reason="this CPU has no AVX512-BF16 (tests/compiler/topi/"
                    "test_x86_matrix_units.py checks the kernel's assembly)")
@pytest.mark.skipif(shutil.which("objdump") is None, reason="needs objdump")
def test_bf16_mlp_cosine_to_fp32(tmp_path):
    rng = np.random.default_rng(0)
    model, ref = _mlp(rng)
    x = rng.standard_normal((4, 256)).astype(np.float32)
    bf, fp = build_model(model, dtype="bfloat16"), build_model(model)
    yb, y32 = load_module(bf)(x)[0], load_module(fp)(x)[0]
    want = ref(x)
    cos = float(yb.ravel() @ want.ravel() / np.linalg.norm(yb) / np.linalg.norm(want))
    assert cos >= 0.999 and np.abs(yb - want).max() > 1e-4     # bf16 rounding, yet close
    np.testing.assert_allclose(y32, want, rtol=1e-5, atol=1e-5)
    assert _uses(bf, "vdpbf16ps", tmp_path) and not _uses(fp, "vdpbf16ps", tmp_path)


def _cnn(rng):
    """x [1, 3, 16, 16] -> Conv 3x3 s2 (24) -> Relu -> depthwise 3x3 -> Conv 1x1 (24) + skip
    -> Relu -> Conv 3x3 (40): odd input channels, output channels not a multiple of 16."""
    def w(*shape):
        return (rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32)
    inits = {"w1": w(24, 3, 3, 3), "b1": w(24), "wd": w(24, 1, 3, 3), "w2": w(24, 24, 1, 1),
             "w3": w(40, 24, 3, 3), "b3": w(40)}
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
         helper.make_node("Relu", ["c1"], ["r1"]),
         helper.make_node("Conv", ["r1", "wd"], ["d"], pads=[1, 1, 1, 1], group=24),
         helper.make_node("Conv", ["d", "w2"], ["c2"]),
         helper.make_node("Add", ["c2", "r1"], ["s"]),
         helper.make_node("Relu", ["s"], ["r2"]),
         helper.make_node("Conv", ["r2", "w3", "b3"], ["y"], pads=[1, 1, 1, 1])], "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 40, 8, 8])],
        [numpy_helper.from_array(a, n) for n, a in inits.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.skipif(not HOST_BF16, reason="this CPU has no AVX512-BF16 (tests/compiler/topi/"
                    "test_x86_matrix_units.py checks the kernel's assembly)")
@pytest.mark.skipif(shutil.which("objdump") is None, reason="needs objdump")
def test_bf16_cnn_cosine_to_fp32(tmp_path):
    rng = np.random.default_rng(1)
    model = _cnn(rng)
    x = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
    bf, fp = build_model(model, dtype="bfloat16"), build_model(model)
    yb, y32 = load_module(bf)(x)[0], load_module(fp)(x)[0]
    cos = float(yb.ravel() @ y32.ravel() / np.linalg.norm(yb) / np.linalg.norm(y32))
    assert cos >= 0.999 and np.abs(yb - y32).max() > 1e-4
    # this shallow net meets the bar all in bf16: the accuracy rule keeps no layer fp32
    assert bf.stats["bf16"]["fp32_prefix"] == 0 and bf.stats["bf16"]["candidates"] == 3
    packed = {k: v for k, v in bf.params.items() if "#conv_bf16" in k}
    assert len(packed) == 3 and all(v.dtype == np.int16 for v in packed.values())
    assert not any(v.dtype == np.int16 for v in fp.params.values())
    assert _uses(bf, "vdpbf16ps", tmp_path)


@pytest.mark.slow
@pytest.mark.skipif(not HOST_BF16, reason="this CPU has no AVX512-BF16")
# the bar on both bench models (seeded random weights, 32 x 32 here, 224 in
# bench/int8_cpu.py). All in bf16 MobileNetV2 measures 0.99895 here: the build keeps its
# first layers fp32 (compiler.graph_lower.bf16_accuracy); ResNet-18 stays all bf16
@pytest.mark.parametrize("name, fp32_layers", [("resnet18", 0), ("mobilenet_v2", None)])
def test_bf16_bench_models_cosine_to_fp32(name, fp32_layers):
    from tests.models import builders
    model = getattr(builders, f"build_{name}")(32)
    rng = np.random.default_rng(7)          # not the input the build's emulation ran on
    cm = build_model(model, dtype="bfloat16")
    ref = load_module(build_model(model))
    for x in rng.standard_normal((3, 1, 3, 32, 32)).astype(np.float32):
        yb, y32 = load_module(cm)(x)[0], ref(x)[0]
        assert float(yb.ravel() @ y32.ravel() / np.linalg.norm(yb) / np.linalg.norm(y32)) >= 0.999
    st = cm.stats["bf16"]
    assert st["fp32_prefix"] == fp32_layers if fp32_layers is not None else st["fp32_prefix"] > 0


def test_dtype_option_errors():
    model, _ = _mlp(np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"dtype must be 'float32' or 'bfloat16'.*not 'float16'"):
        build_model(model, dtype="float16")
    with pytest.raises(ValueError, match=r"dtype='bfloat16' applies to target 'llvm' alone"):
        build_model(model, target="vta", dtype="bfloat16")
