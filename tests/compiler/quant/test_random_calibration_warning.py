"""build_model quantizing without ``calib`` warns once (RandomCalibrationWarning) naming
``calib``, the inputs and the fix, at the caller's line; with ``calib`` it is quiet; ``vta
compile`` without ``--calibrate`` shows the same message as one ``warning:`` line."""
import warnings

import numpy as np
import onnx
import pytest

from compiler import build_model
from compiler.quant.calibration import RandomCalibrationWarning
from tests.cli_util import run_cli
from tests.models.single_node import single_node_model

X = np.ones((1, 16, 4, 4), np.float32)


def _relu():
    return single_node_model("Relu", [("x", X, False)])[0]


@pytest.mark.parametrize("options", [{"target": "vta"}, {"target": "llvm", "quantize": "int8"}],
                         ids=["vta", "llvm-int8"])
def test_no_calib_warns_once_at_the_callers_line(options):
    with pytest.warns(RandomCalibrationWarning) as record:
        build_model(_relu(), **options)
    assert len(record) == 1
    w = record[0]
    assert w.filename == __file__, w.filename       # the build_model call, not our internals
    text = str(w.message)
    assert "calib=None" in text and "seeded random" in text and "accuracy will suffer" in text
    assert "calib={'x': samples [N, 16, 4, 4]}" in text


def test_calib_given_is_quiet():
    calib = {"x": np.random.default_rng(0).standard_normal((4, 16, 4, 4)).astype(np.float32)}
    with warnings.catch_warnings():
        warnings.simplefilter("error", RandomCalibrationWarning)
        build_model(_relu(), target="vta", calib=calib)


def test_cli_shows_the_message_once(tmp_path):
    onnx.save(_relu(), tmp_path / "relu.onnx")
    r = run_cli("compile", tmp_path / "relu.onnx", "--target", "vta", "-o", tmp_path / "m.vtamod",
                "--quiet")
    assert r.exit_code == 0, r.output
    assert r.output.count("no calibration data") == 1, r.output
    assert "warning: no calibration data (calib=None)" in r.output
    assert "vta compile --calibrate DATA.npz" in r.output
    assert "RandomCalibrationWarning" not in r.output         # one line, not Python's form
