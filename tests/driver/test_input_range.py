"""An accelerator model's float inputs: NaN is an error that names the input and counts
the NaNs; values beyond the calibrated range (infinities included) are counted and
reported as a warning with the range, from Python and from `vta run`."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from click.testing import CliRunner

from compiler import build_model
from driver.runtime import RuntimeModuleError, load_module
from driver.runtime.input_check import InputNaNWarning, InputRangeWarning
from driver.cli.main import cli
from tests.cli_util import run_cli

DIGITS = "examples/digits/digits_cnn.onnx"


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    d = np.load("examples/digits/calib.npz")
    calib = (d["images"].astype(np.float32) / 16).reshape(-1, 1, 8, 8)[:32]
    path = tmp_path_factory.mktemp("range") / "digits.vtamod"
    build_model(DIGITS, target="vta", input_shapes={"image": (1, 1, 8, 8)},
                calib={"image": calib}).save(path)
    return path


def test_nan_input_is_an_error_naming_input_and_count(digits):
    m = load_module(digits, device="fsim")
    x = np.zeros((1, 1, 8, 8), np.float32)
    x[0, 0, :3, 0] = np.nan
    with pytest.raises(RuntimeModuleError, match=r"input 'image' has 3 NaN value\(s\) of 64"):
        m(x)


def test_out_of_range_inputs_are_counted_and_reported(digits):
    m = load_module(digits, device="fsim")
    lo, hi = next(i["range"] for i in m.graph["inputs"] if i["name"] == "image")
    assert lo < 0 < hi
    x = np.zeros((1, 1, 8, 8), np.float32)
    x[0, 0, 0, :4] = [np.inf, -np.inf, 1e30, hi * 2]
    with pytest.warns(InputRangeWarning, match=re.escape(
            f"input 'image': 4 of 64 value(s) lie outside the calibrated range [{lo:g}, {hi:g}]")):
        out = m(x)[0]
    assert np.isfinite(out).all()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m(np.full((1, 1, 8, 8), hi, np.float32))   # the range's own ends are fine


def test_vta_run_prints_the_count_and_refuses_nan(digits, tmp_path):
    x = np.zeros((1, 1, 8, 8), np.float32)
    x[0, 0, 0, :2] = 1e30
    np.save(tmp_path / "big.npy", x)
    r = run_cli("run", digits, "--device", "fsim", "--input", f"image={tmp_path / 'big.npy'}")
    assert r.exit_code == 0, r.output
    assert "warning: input 'image': 2 of 64 value(s) lie outside the calibrated range" in r.output
    assert "compile with --calibrate samples like these" in r.output and "calib=" not in r.output
    x[0, 0, 0, 0] = np.nan
    np.save(tmp_path / "nan.npy", x)
    r = run_cli("run", digits, "--device", "fsim", "--input", f"image={tmp_path / 'nan.npy'}")
    assert r.exit_code == 1 and "input 'image' has 1 NaN value(s) of 64" in r.output
    assert "Traceback" not in r.output


@pytest.mark.parametrize("device", ["fsim", "tsim"])
def test_vta_run_draws_its_random_input_from_the_calibrated_range(digits, device):
    """no saturation warning for the default input; the input and latency lines as for a
    CPU module (test_runtime_cli), cycles on top for the timed device"""
    lo, hi = next(i["range"] for i in load_module(digits).graph["inputs"])
    r = run_cli("run", digits, "--device", device)
    assert r.exit_code == 0, r.output
    assert "warning" not in r.output
    lines = r.output.splitlines()
    assert lines[0] == (f"input image: float32[1, 1, 8, 8] random (seed 0, uniform in the "
                        f"calibrated range [{lo:g}, {hi:g}])")
    assert lines[1].startswith("output logits: float32[1, 10] top-5 classes: ")
    assert re.fullmatch(rf"latency: [0-9.]+ ms, one run \(host wall clock, device {device}: "
                        r"mostly simulation time\)", lines[2]), lines[2]
    assert ("total cycles" in r.output) == (device == "tsim")


def test_vta_run_eval_sums_range_warnings_into_one_stderr_line(digits, tmp_path):
    x = np.zeros((3, 1, 8, 8), np.float32)
    x[:, 0, 0, :2] = 1e30                     # 2 values beyond the range in each of 3 images
    np.savez(tmp_path / "e.npz", images=x, labels=np.zeros(3, np.int64))
    r = CliRunner().invoke(cli, ["run", str(digits), "--device", "fsim",
                                 "--eval", str(tmp_path / "e.npz")])
    assert r.exit_code == 0, r.output
    assert "accuracy" in r.stdout and "warning" not in r.stdout
    lines = [ln for ln in r.stderr.splitlines() if ln]
    assert len(lines) == 1 and lines[0].startswith(
        "warning: input 'image': 6 value(s) in 3 runs lie outside the calibrated range"), lines


def test_float_cpu_model_warns_of_nan_inputs_with_the_count(tmp_path):
    path = build_model(DIGITS, target="llvm").save(str(tmp_path / "c.vtamod"))
    x = np.zeros((1, 1, 8, 8), np.float32)
    x[0, 0, 0, :5] = np.nan
    with pytest.warns(InputNaNWarning, match=r"input 'image' has 5 NaN value\(s\) of 64"):
        load_module(path)(x)
    np.save(tmp_path / "nan.npy", x)
    r = CliRunner().invoke(cli, ["run", path, "--input", f"image={tmp_path / 'nan.npy'}",
                                 "--repeat", "2"])
    assert r.exit_code == 0, r.output
    assert r.stderr.count("warning: input 'image' has 5 NaN value(s) of 64") == 1, r.stderr
