"""``vta compile`` / ``vta run`` with a CPU list (fleet modules), as a new user meets them."""
from __future__ import annotations

import pytest

from tests.cli_util import run_cli

DIGITS = "examples/digits/digits_cnn.onnx"


@pytest.mark.parametrize("target, says", [
    ("llvm -mcpu=x86-64-v2,,x86-64-v3", "an empty entry in the list"),
    ("llvm -mcpu=x86-64-v2, x86-64-v3", "no spaces around the commas"),
    ("llvm -mcpu=x86-64-v2,x86-64-v3,x86-64-v2", "x86-64-v2 is listed twice"),
])
def test_a_malformed_cpu_list_is_a_usage_error(tmp_path, target, says):
    res = run_cli("compile", DIGITS, "--target", target, "-o", tmp_path / "m.vtamod")
    assert res.exit_code == 2 and says in res.output and "Traceback" not in res.output
    assert not (tmp_path / "m.vtamod").exists()


def test_aot_with_a_cpu_list_is_a_usage_error(tmp_path):
    res = run_cli("compile", DIGITS, "--target", "llvm -mcpu=x86-64-v2,x86-64-v3",
                  "--executor", "aot", "-o", tmp_path / "m.vtamod")
    assert res.exit_code == 2 and "one object for one CPU, not a CPU list" in res.output


def test_compile_and_run_name_the_variants(tmp_path):
    out = tmp_path / "fleet.vtamod"
    res = run_cli("compile", DIGITS, "--target", "llvm -mcpu=x86-64-v2,x86-64-v3", "-o", out)
    assert res.exit_code == 0, res.output
    assert "CPU variants: x86-64-v2 (LLVM " in res.output and "x86-64-v3 (LLVM " in res.output
    res = run_cli("run", out, "--eval", "examples/digits/heldout.npz", "--eval-scale", "0.0625")
    assert res.exit_code == 0, res.output
    assert "CPU variant x86-64-v3: the best of the module's variants" in res.output


def test_bf16_with_a_cpu_list_reports_the_loaded_variant(tmp_path):
    out = tmp_path / "bf16.vtamod"
    res = run_cli("compile", DIGITS, "--target", "llvm -mcpu=x86-64-v2,x86-64-v3",
                  "--dtype", "bfloat16", "-o", out)
    assert res.exit_code == 0, res.output
    assert "bf16 vs fp32 on a seeded input" in res.output and "Error" not in res.output
