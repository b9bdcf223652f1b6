"""`vta compile --quantize int8`: a model in int8 on the CPU (the kernels are checked bit for
bit in tests/compiler/quant; here the command, its report and the classifier's accuracy)."""
from __future__ import annotations

import numpy as np

from compiler.codegen.llvm.target import host_target
from compiler.quant.kernels_x86 import select
from driver.runtime import load_module
from tests.cli_util import run_cli as run

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
