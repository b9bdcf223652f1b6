"""`vta compile --calibrate-scale` and `vta run` leave integer inputs (token ids) as they are."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from driver.runtime import load_module
from tests.cli_util import run_cli as run


def _embedding_model(path):
    """ids int64[1, 4] -> Gather of a [4, 16] table -> Relu: row 3 is 100x the others."""
    table = np.full((4, 16), 0.1, np.float32)
    table[3] = 10.0
    g = helper.make_graph(
        [helper.make_node("Gather", ["table", "ids"], ["e"]), helper.make_node("Relu", ["e"], ["y"])],
        "emb", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 16])],
        [numpy_helper.from_array(table, "table")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


def test_calibrate_scale_leaves_token_ids_alone(tmp_path):
    # calibrated on ids = 3 only: scaled by 0.5 and cast (the old behaviour) they became
    # 1, the calibration saw 0.1 and a run on id 3 saturated at ~0.1 instead of 10
    model, calib, out = tmp_path / "emb.onnx", tmp_path / "ids.npz", tmp_path / "emb.vtamod"
    _embedding_model(model)
    np.savez(calib, ids=np.full((4, 4), 3, np.int64))
    r = run("compile", model, "-o", out, "--target", "vta", "--calibrate", calib,
            "--calibrate-scale", "0.5", "--quiet")
    assert r.exit_code == 0, r.output
    y, = load_module(out)(ids=np.full((1, 4), 3, np.int64))
    np.testing.assert_allclose(y, 10.0, rtol=0.02)


def test_eval_feeds_integer_inputs_unscaled(tmp_path):
    # ids [0, 1, 2, 3]: the largest output is row 3's first value, flat index 48; scaled by
    # 0.5 in float32 (the old behaviour) the ids became [0, 0, 1, 1] and the argmax 0
    model, calib, out = tmp_path / "emb.onnx", tmp_path / "ids.npz", tmp_path / "emb.vtamod"
    data = tmp_path / "eval.npz"
    _embedding_model(model)
    np.savez(calib, ids=np.array([[0, 1, 2, 3]], np.int64))
    np.savez(data, images=np.array([[0, 1, 2, 3]], np.int64), labels=np.array([48]))
    assert run("compile", model, "-o", out, "--target", "vta", "--calibrate", calib,
               "--quiet").exit_code == 0
    r = run("run", out, "--eval", data, "--eval-scale", "0.5")
    assert r.exit_code == 0, r.output
    assert "accuracy: 100.00 % (1 / 1)" in r.output, r.output
