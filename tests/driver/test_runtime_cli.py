"""``vta compile`` and ``vta run`` on the bundled digits model."""
from __future__ import annotations

import os

import numpy as np
import pytest
from click.testing import CliRunner

from driver.cli.main import cli

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DIGITS = os.path.join(ROOT, "examples", "digits", "digits_cnn.onnx")
HELDOUT = os.path.join(ROOT, "examples", "digits", "heldout.npz")


@pytest.fixture(scope="module")
def digits_module(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("cli") / "digits.vtamod")
    res = CliRunner().invoke(cli, ["compile", DIGITS, "-o", out, "--quiet"])
    assert res.exit_code == 0, res.output
    assert "wrote" in res.output and "input  image: float32[1, 1, 8, 8]" in res.output
    return out


def test_run_with_input_file_prints_top5_and_latency(digits_module, tmp_path):
    x = np.load(HELDOUT)["images"][:1].reshape(1, 1, 8, 8).astype("float32") / 16
    np.save(tmp_path / "x.npy", x)
    res = CliRunner().invoke(cli, ["run", digits_module, "--input", f"image={tmp_path / 'x.npy'}",
                                   "--repeat", "3", "--save-output", str(tmp_path / "y.npy")])
    assert res.exit_code == 0, res.output
    assert "top-5 classes:" in res.output and "latency:" in res.output
    label = int(np.load(HELDOUT)["labels"][0])
    assert int(np.argmax(np.load(tmp_path / "y.npy"))) == label


def test_run_seeded_random_input(digits_module):
    res = CliRunner().invoke(cli, ["run", digits_module, "--repeat", "1"])
    assert res.exit_code == 0, res.output
    assert "random (seed 0)" in res.output


def test_eval_prints_accuracy(digits_module):
    res = CliRunner().invoke(cli, ["run", digits_module, "--eval", HELDOUT, "--eval-scale", "0.0625"])
    assert res.exit_code == 0, res.output
    assert "accuracy: 98.33 % (353 / 359)" in res.output


def test_errors_exit_non_zero_with_a_message(digits_module, tmp_path):
    runner = CliRunner()
    res = runner.invoke(cli, ["compile", str(tmp_path / "missing.onnx"), "-o", str(tmp_path / "m")])
    assert res.exit_code != 0 and "no such file" in res.output
    res = runner.invoke(cli, ["compile", DIGITS, "-o", str(tmp_path / "m"), "--input-shape", "image:1x1x8"])
    assert res.exit_code != 0 and "Error" in res.output
    res = runner.invoke(cli, ["run", str(tmp_path / "nothing.vtamod")])
    assert res.exit_code != 0 and "nothing.vtamod' does not exist" in res.output
    np.save(tmp_path / "bad.npy", np.zeros((1, 1, 4, 4), "float32"))
    res = runner.invoke(cli, ["run", digits_module, "--input", str(tmp_path / "bad.npy")])
    assert res.exit_code != 0 and "compiled for [1, 1, 8, 8]" in res.output


def test_vta_run_works_without_llvmlite_or_onnx(digits_module):
    import subprocess
    import sys
    code = ("import sys\n"
            "for n in ('llvmlite', 'onnx', 'onnxruntime'): sys.modules[n] = None\n"
            "from driver.cli.main import cli\n"
            "cli(['run', sys.argv[1], '--repeat', '1'], prog_name='vta')\n")
    proc = subprocess.run([sys.executable, "-c", code, digits_module], capture_output=True, text=True,
                          cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT))
    assert proc.returncode == 0, proc.stderr
    assert "top-5 classes:" in proc.stdout


def test_cross_target_compiles_to_an_object_and_run_names_the_machine(tmp_path):
    out = str(tmp_path / "arm.vtamod")
    res = CliRunner().invoke(cli, ["compile", DIGITS, "--target", "aarch64", "-o", out, "--quiet"])
    assert res.exit_code == 0, res.output
    assert os.path.isfile(os.path.join(out, "kernels.o"))
    assert not os.path.exists(os.path.join(out, "kernels.so"))
    res = CliRunner().invoke(cli, ["run", out])
    assert res.exit_code == 1 and "kernels compiled for aarch64" in res.output, res.output
    res = CliRunner().invoke(cli, ["compile", DIGITS, "--target", "tpu", "-o", str(tmp_path / "x")])
    assert res.exit_code == 2 and "--target 'tpu': unknown target" in res.output, res.output
