"""`vta compile --quantize int8`: a model in int8 on the CPU (the kernels are checked bit for
bit in tests/compiler/quant; here the command, its report and the classifier's accuracy)."""
from __future__ import annotations

import numpy as np
import onnx
import pytest

from compiler.codegen.llvm.target import host_target
from compiler.quant.kernels import select
from driver.runtime import load_module
from tests.cli_util import run_cli as run
from tests.models.builders import OnnxBuilder, _io

DIGITS = "examples/digits/digits_cnn.onnx"


def test_compile_quantize_int8_runs_on_cpu(tmp_path):
    out = tmp_path / "digits_int8.vtamod"
    r = run("compile", DIGITS, "-o", out, "--quantize", "int8", "--per-channel",
            "--calibrate", "examples/digits/calib.npz", "--calibrate-scale", "0.0625", "--quiet")
    assert r.exit_code == 0, r.output
    assert f"int8 on the CPU ({select(host_target().features).name} kernels)" in r.output
    m = load_module(str(out))
    held = np.load("examples/digits/heldout.npz")
    xs = held["images"][:64].astype(np.float32).reshape(64, 1, 1, 8, 8) * 0.0625
    outs = [m(x)[0] for x in xs]
    assert outs[0].dtype == np.float32
    assert np.mean([int(np.argmax(y)) for y in outs] == held["labels"][:64]) > 0.9


def test_quantize_int8_needs_an_llvm_graph_target(tmp_path):
    r = run("compile", DIGITS, "-o", tmp_path / "m.vtamod", "--quantize", "int8",
            "--target", "cuda")
    assert r.exit_code != 0
    assert "--quantize int8 builds a graph-executor module for --target llvm" in r.output


@pytest.mark.skipif("+avx512bf16" not in host_target().features.split(","),
                    reason="this CPU has no AVX512-BF16: the build would be fp32")
def test_compile_bfloat16_prints_accuracy_against_fp32(tmp_path):
    b = OnnxBuilder(0)                   # x [2, 64] -> Gemm 64 -> Relu -> Gemm 32
    y = b.dense(b.node("Relu", [b.dense("x", 64, 64)]), 64, 32)
    onnx.save(b.model([_io("x", [2, 64])], [_io(y, None)], 13), tmp_path / "mlp.onnx")
    r = run("compile", tmp_path / "mlp.onnx", "-o", tmp_path / "bf16.vtamod", "--dtype",
            "bfloat16", "--quiet")
    assert r.exit_code == 0, r.output
    line = next(ln for ln in r.output.splitlines() if "bf16 vs fp32" in ln)
    cos, err = line.split("cosine ")[1].split(", max error ")
    assert float(cos) >= 0.999 and float(err.split()[0]) > 0     # bf16 rounding, yet close
    assert "bf16: 2 of 2 dense layers built in bf16" in r.output


@pytest.mark.parametrize("args, words", [
    (["--quantize", "int8", "--target", "vta"], "--quantize int8 does not apply to --target vta"),
    (["--dtype", "bfloat16", "--target", "vta"], "--dtype bfloat16 does not apply to --target vta"),
    (["--dtype", "bfloat16", "--quantize", "int8"], "exclude each other"),
])
def test_precision_options_that_do_not_apply_are_refused_before_work(tmp_path, args, words):
    r = run("compile", DIGITS, "-o", tmp_path / "m.vtamod", *args)
    assert r.exit_code == 2 and words in r.output, r.output
    assert not (tmp_path / "m.vtamod").exists()


def test_bfloat16_cross_build_counts_layers_and_skips_the_host_check(tmp_path):
    r = run("compile", DIGITS, "-o", tmp_path / "a.vtamod", "--dtype", "bfloat16",
            "--target", "aarch64", "--quiet")
    assert r.exit_code == 0, r.output
    assert "bf16: 0 of 1 dense layers built in bf16 (the others stay fp32: N must be a " \
           "multiple of 16" in r.output
    assert "bf16 accuracy check skipped: --target aarch64 does not run on this host" in r.output
    assert (tmp_path / "a.vtamod" / "manifest.json").exists()
