"""``build_model(..., dtype="bfloat16")``: dense layers in bf16 (vdpbf16ps, fp32 accumulation)
within cosine 0.999 of fp32; a plain build never uses bf16."""
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


def test_dtype_option_errors():
    model, _ = _mlp(np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"dtype must be 'float32' or 'bfloat16'.*not 'float16'"):
        build_model(model, dtype="float16")
    with pytest.raises(ValueError, match=r"dtype='bfloat16' applies to target 'llvm' alone"):
        build_model(model, target="vta", dtype="bfloat16")
