"""compiler.build_model: one entry for every target; what it refuses, and what it records."""
from __future__ import annotations

import os

import numpy as np
import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DIGITS = os.path.join(ROOT, "examples", "digits", "digits_cnn.onnx")


def test_one_callable_under_both_import_forms():
    import compiler
    from compiler import build_model
    from compiler.build_model import build_model as fn
    assert callable(build_model) and build_model is compiler.build_model
    assert fn.__name__ == "build_model" and fn.__module__ == "compiler.build_model"


def test_refusals_name_the_value_and_the_fix():
    from compiler import build_model
    with pytest.raises(ValueError, match=r"target must be 'llvm'.*'vta'.*not 'tpu'"):
        build_model(DIGITS, target="tpu")
    with pytest.raises(ValueError, match=r"host shared libraries.*aarch64.*not this machine"):
        build_model(DIGITS, target="aarch64")
    with pytest.raises(ValueError, match=r"config apply to target 'vta' only, not 'llvm'"):
        build_model(DIGITS, config="1x16_i8w8a32_15_15_18_17")
    with pytest.raises(TypeError, match=r"unexpected option\(s\) colour"):
        build_model(DIGITS, target="vta", colour="red")
    with pytest.raises(ValueError, match=r"vta takes no options.*config="):
        build_model(DIGITS, target="vta -x")


def test_cpu_level_target_records_its_features():
    from compiler import build_model
    from driver.runtime import load_module
    cm = build_model(DIGITS, target="llvm -mcpu=x86-64-v2")
    assert "-mcpu=x86-64-v2" in cm.targets[0] and cm.cpu["cpu"] == "x86-64-v2"
    assert "+sse4.2" in cm.cpu["features"] and "+avx2" not in cm.cpu["features"]
    man = cm.manifest()
    assert man["cpu"] == cm.cpu and man["targets"] == cm.targets
    x = np.random.default_rng(0).random((1, 1, 8, 8)).astype("float32")
    np.testing.assert_allclose(load_module(cm)(x)[0], load_module(build_model(DIGITS))(x)[0],
                               rtol=1e-5, atol=1e-5)
