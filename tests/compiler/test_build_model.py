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
    with pytest.raises(ValueError, match=r"config apply to target 'vta' only, not 'llvm'"):
        build_model(DIGITS, config="1x16_i8w8a32_15_15_18_17")
    with pytest.raises(TypeError, match=r"unexpected option\(s\) colour"):
        build_model(DIGITS, target="vta", colour="red")
    with pytest.raises(ValueError, match=r"vta takes no options.*config="):
        build_model(DIGITS, target="vta -x")


@pytest.mark.parametrize("target, arch, magic", [
    ("aarch64", "aarch64", b"\x7fELF"), ("armv7", "armv7", b"\x7fELF"), ("wasm32", "wasm32", b"\0asm")])
def test_cross_triple_module_holds_an_object_for_that_machine(tmp_path, target, arch, magic):
    import platform
    import struct

    from compiler import build_model
    from driver.runtime import RuntimeModuleError, load_module
    cm = build_model(DIGITS, target=target)
    assert set(cm.files) == {"kernels.o"} and cm.files["kernels.o"][:4] == magic
    assert cm.cpu["triple"].startswith(arch) and f"-mtriple={cm.cpu['triple']}" in cm.targets[0]
    if magic == b"\x7fELF":   # a relocatable object (ET_REL) for that machine's ISA
        e_type, e_machine = struct.unpack_from("<HH", cm.files["kernels.o"], 16)
        assert e_type == 1 and e_machine == {"aarch64": 183, "armv7": 40}[arch]
    cm.save(str(tmp_path / "m.vtamod"))
    assert (tmp_path / "m.vtamod" / "kernels.o").is_file()
    here = platform.machine()
    if here.startswith(arch[:5]):
        return   # built on that machine itself: nothing refuses it
    advice = "WebAssembly runs in Node" if arch == "wasm32" else "run it on that machine"
    with pytest.raises(RuntimeModuleError, match=rf"kernels compiled for {arch} .*this machine is "
                                                 rf"{here}; {advice}"):
        load_module(str(tmp_path / "m.vtamod"))


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


def test_vta_calibration_is_checked_by_the_library():
    from compiler import build_model
    bad = {"image": np.zeros((0, 1, 8, 8), np.float32)}
    with pytest.raises(ValueError, match=r"calib\['image'\] holds no images"):
        build_model(DIGITS, target="vta", calib=bad)
    with pytest.raises(ValueError, match=r"calib\['image'\] has shape \[4, 3, 3\].*\[N, 1, 8, 8\]"):
        build_model(DIGITS, target="vta", calib={"image": np.zeros((4, 3, 3), np.float32)})
    with pytest.raises(ValueError, match=r"calib\['image'\] holds NaN"):
        build_model(DIGITS, target="vta", calib={"image": np.full((2, 1, 8, 8), np.nan, np.float32)})
    with pytest.raises(ValueError, match=r"no samples for input 'image' \(it has 'img'\)"):
        build_model(DIGITS, target="vta", calib={"img": np.zeros((2, 1, 8, 8), np.float32)})
