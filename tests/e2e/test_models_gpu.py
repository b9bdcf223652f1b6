"""Whole models compiled for GPUs (``--target opencl`` / ``--target cuda``) against onnxruntime.

* OpenCL runs on PoCL (OpenCL on the CPU) where no GPU is present: the digits CNN
  (same class as onnxruntime), ResNet-18 at 32x32 and one small BERT layer
  within 1e-4 relative; sizes are small because PoCL is slow.
* CUDA: ResNet-18 at 224x224 and the BERT layer compile to an sm_90 cubin
  without a GPU; with one, they run against onnxruntime.
* ``vta compile --target opencl`` + ``vta run`` through the CLI.

Each model goes through the deployment path: compile, save the folder, load it
with ``driver.runtime.load_module`` (which checks the manifest and picks
``driver.gpu_runtime``), run; and once from memory (``load_module(cm)``).
"""
from __future__ import annotations

import json
import os

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from click.testing import CliRunner

from compiler.build_model import build_model
from driver.runtime import load_module
from tests.gpu_marks import needs_cuda_compiler, needs_gpu, needs_opencl
from tests.models import builders
from tests.models.oracle import assert_close, ort_run

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DIGITS = os.path.join(ROOT, "examples", "digits", "digits_cnn.onnx")
HELDOUT = os.path.join(ROOT, "examples", "digits", "heldout.npz")


def small_bert():
    return builders.build_bert_layer(seq=16, hidden=64, heads=2, ffn=128)


def compile_and_load(model, tmp_path, name, target):
    return load_module(build_model(model, target=target).save(str(tmp_path / f"{name}.vtamod")))


def check_against_ort(m, model, rel=1e-4, what="model"):
    (iname, shape, dtype), = m.input_info()
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    ours = m(x)[0]
    assert_close(ours, ort_run(model, {iname: x})[0], rel=rel, what=what)


@needs_opencl
def test_opencl_digits_same_class_as_onnxruntime(tmp_path):
    m = compile_and_load(DIGITS, tmp_path, "digits", "opencl")
    assert type(m).__name__ == "GpuGraphModule"
    images = np.load(HELDOUT)["images"].astype("float32")[:24, None] / 16.0
    sess = ort.InferenceSession(DIGITS, providers=["CPUExecutionProvider"])
    ref = sess.run(None, {"image": images})[0]
    ours = np.concatenate([m(img[None])[0] for img in images])
    np.testing.assert_array_equal(ours.argmax(1), ref.argmax(1))
    assert_close(ours, ref, rel=1e-4, what="digits logits")


@needs_opencl
def test_opencl_module_runs_from_memory():
    model = onnx.load(DIGITS)
    cm = build_model(model, target="opencl")
    m = load_module(cm)
    assert type(m).__name__ == "GpuGraphModule" and m.target == "opencl"
    check_against_ort(m, model, what="digits from memory")


@needs_opencl
@pytest.mark.parametrize("name,build", [("resnet18", lambda: builders.build_resnet18(32)),
                                        ("bert_layer", small_bert)])
def test_opencl_model_within_1e4_of_onnxruntime(tmp_path, name, build):
    model = build()
    check_against_ort(compile_and_load(model, tmp_path, name, "opencl"), model, what=name)


@needs_cuda_compiler
def test_cuda_resnet18_224_compiles_to_sm90_module(tmp_path):
    path = build_model(builders.build_resnet18(224), target="cuda").save(str(tmp_path / "r18.vtamod"))
    files = set(os.listdir(path))
    assert {"graph.json", "kernels.cu", "kernels.cubin", "params.npz", "manifest.json"} <= files
    with open(os.path.join(path, "kernels.cubin"), "rb") as f:
        assert f.read(4) == b"\x7fELF"
    man = json.load(open(os.path.join(path, "manifest.json")))
    assert (man["format"], man["version"]) == ("vtamod", 3)
    assert man["targets"] == ["cuda -arch=sm_90"] and "cpu" not in man   # GPU only
    assert {"graph.json", "kernels.cu", "kernels.cubin", "params.npz"} <= set(man["files"])
    g = json.load(open(os.path.join(path, "graph.json")))
    src = open(os.path.join(path, "kernels.cu")).read()
    names = set(g["kernels"])
    assert all(name in src for name in names)
    assert all(c["kernel"] in names and len(c["grid"]) == len(c["block"]) == 3 for c in g["calls"])
    # convolutions and the dense layer are ours: no library calls in the source
    assert "cudnn" not in src.lower() and "cublas" not in src.lower()
    # the split-K partial sums of the deep convolutions accumulate in registers, not memory
    assert "_part_local[" in src


@needs_cuda_compiler
def test_cuda_bert_layer_compiles_for_sm80_too():
    cm = build_model(small_bert(), target="cuda -arch=sm_80")
    assert cm.targets == ["cuda -arch=sm_80"]
    assert cm.files["kernels.cubin"][:4] == b"\x7fELF"


@needs_gpu
@pytest.mark.parametrize("name,build", [("digits", lambda: onnx.load(DIGITS)),
                                        ("resnet18", lambda: builders.build_resnet18(64)),
                                        ("bert_layer", builders.build_bert_layer)])
def test_cuda_model_within_1e4_of_onnxruntime(tmp_path, name, build):
    model = build()
    check_against_ort(compile_and_load(model, tmp_path, name, "cuda"), model, what=name)


def test_unknown_gpu_target_option_is_refused():
    with pytest.raises(ValueError, match="cuda takes -arch"):
        build_model(onnx.load(DIGITS), target="cuda -mcpu=x")


@needs_opencl
def test_cli_compile_and_run_opencl(tmp_path):
    from driver.cli.main import cli
    out = str(tmp_path / "digits_cl.vtamod")
    res = CliRunner().invoke(cli, ["compile", DIGITS, "-o", out, "--target", "opencl", "--quiet"])
    assert res.exit_code == 0, res.output
    assert "wrote" in res.output and os.path.isfile(os.path.join(out, "kernels.cl"))
    res = CliRunner().invoke(cli, ["run", out, "--repeat", "2"])
    assert res.exit_code == 0, res.output
    assert "top-5 classes:" in res.output and "latency:" in res.output and "(opencl)" in res.output
    res = CliRunner().invoke(cli, ["compile", DIGITS, "-o", out, "--target", "vulkan"])
    assert res.exit_code != 0 and "--target opencl" in res.output
