"""Bad shapes, inputs and module parts through the `vta` CLI: each one ``Error:`` line that
names the file or input, the value and the fix; nothing allocated for a shape that cannot
fit, nothing guessed for a dynamic dimension, no numpy or internal message."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from driver.cli.main import cli
from driver.runtime.source import manifest_digest, sha256

DIGITS = Path(__file__).resolve().parents[2] / "examples" / "digits" / "digits_cnn.onnx"
HUGE = "1x16x100000x100000"   # 640 GB of float32 per activation


def _cli(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _error(res, *words) -> str:
    out = res.output
    assert res.exit_code == 1, out
    lines = out.strip().splitlines()
    assert lines[-1].startswith("Error: ") and "internal error" not in out, out
    for w in words:
        assert w in lines[-1], f"{w!r} not in {lines[-1]!r}"
    return lines[-1]


def _conv_onnx(path: Path, dims) -> Path:
    """conv 16->16 + relu, input x of ``dims`` (names for dynamic ones)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    w = numpy_helper.from_array(np.full((16, 16, 3, 3), 0.01, np.float32), "w")
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["y"])], "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)], [w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


@pytest.fixture(scope="module")
def digits_cpu(tmp_path_factory):
    out = tmp_path_factory.mktemp("msgs") / "d.vtamod"
    res = _cli("compile", DIGITS, "-o", out, "--quiet")
    assert res.exit_code == 0, res.output
    return out


def _forge(src: Path, dst: Path, name: str, data: bytes) -> Path:
    """A copy of module ``src`` whose part ``name`` is ``data``, the manifest made to match:
    a consistent but wrong module, as a buggy writer or a hand edit would leave."""
    shutil.copytree(src, dst)
    (dst / name).write_bytes(data)
    man = json.loads((dst / "manifest.json").read_text())
    man["files"][name] = sha256(data)
    man["digest"] = manifest_digest(man)
    (dst / "manifest.json").write_text(json.dumps(man))
    return dst


def test_huge_shape_is_refused_before_calibrating(tmp_path):
    model = _conv_onnx(tmp_path / "c.onnx", ["N", 16, "H", "W"])
    _error(_cli("compile", model, "--target", "vta", "--input-shape", f"x:{HUGE}",
                "-o", tmp_path / "v.vtamod", "--quiet"),
           "calibrating on 8 samples", f"x float32[{HUGE.replace('x', ', ')}]", "bytes",
           "--input-shape")


def test_huge_shape_is_refused_before_running(tmp_path):
    model = _conv_onnx(tmp_path / "c.onnx", ["N", 16, "H", "W"])
    out = tmp_path / "c.vtamod"
    assert _cli("compile", model, "--input-shape", f"x:{HUGE}", "-o", out,
                "--quiet").exit_code == 0
    _error(_cli("run", out), str(out), "running it needs", "GiB) of buffers",
           "recompile it for smaller inputs")


def test_dynamic_height_and_width_need_an_input_shape(tmp_path):
    model = _conv_onnx(tmp_path / "c.onnx", ["N", 16, "H", "W"])
    for target in ("llvm", "vta"):
        _error(_cli("compile", model, "--target", target, "-o", tmp_path / "c.vtamod",
                    "--quiet"),
               "input 'x' has dynamic shape Nx16xHxW",
               "--input-shape x:1x16xHxW (H, W: the sizes to run at)")
    one_channel = _conv_onnx(tmp_path / "one.onnx", ["N", 16, 4, "W"])
    _error(_cli("compile", one_channel, "-o", tmp_path / "c.vtamod", "--quiet"),
           "--input-shape x:1x16x4xW (W: the sizes to run at)")
    batch_only = _conv_onnx(tmp_path / "b.onnx", ["N", 16, 4, 4])
    res = _cli("compile", batch_only, "-o", tmp_path / "b.vtamod", "--quiet")
    assert res.exit_code == 0 and "input  x: float32[1, 16, 4, 4]" in res.output


def test_an_input_shape_the_model_cannot_take_names_both_shapes(tmp_path):
    _error(_cli("compile", DIGITS, "--input-shape", "image:1x1x4x4", "-o", tmp_path / "d",
                "--quiet"),
           "x has K=64 features", "takes K=256", "input 'image' was given shape 1x1x4x4",
           "the model declares batchx1x8x8")


def test_a_damaged_plan_names_the_field(digits_cpu, tmp_path):
    g = json.loads((digits_cpu / "graph.json").read_text())
    g["calls"][0]["args"][0] = {"kind": "slot", "slot": 6}
    bad = _forge(digits_cpu, tmp_path / "bad.vtamod", "graph.json", json.dumps(g).encode())
    _error(_cli("run", bad), "graph.json: calls[0].args[0].slot is 6, past the",
           "recompile the module")


def test_params_of_another_shape_are_named(digits_cpu, tmp_path):
    with np.load(digits_cpu / "params.npz") as z:
        params = {k: z[k] for k in z.files}
    name = sorted(params)[0]
    params[name] = np.zeros((3,) + params[name].shape, params[name].dtype)
    (tmp_path / "p.npz").write_bytes(b"")
    np.savez(tmp_path / "p.npz", **params)
    bad = _forge(digits_cpu, tmp_path / "bad.vtamod", "params.npz",
                 (tmp_path / "p.npz").read_bytes())
    _error(_cli("run", bad), "params.npz: array", f"{name!r} is float32[3, ", "reads float32[",
           "do not belong together")


@pytest.mark.parametrize("value,words", [
    (np.full((1, 1, 8, 8), 1 + 2j, np.complex64), ["holds complex64 values",
                                                    "imaginary part"]),
    (np.full((1, 1, 8, 8), "a"), ["holds <U1 values, text"]),
])
def test_inputs_must_be_real_numbers(digits_cpu, tmp_path, value, words):
    np.save(tmp_path / "x.npy", value)
    _error(_cli("run", digits_cpu, "--input", f"image={tmp_path / 'x.npy'}"),
           f"--input image={tmp_path / 'x.npy'}", *words, "real numbers")


def test_a_folder_without_a_plan_under_a_device(digits_cpu, tmp_path):
    folder = tmp_path / "noplan"
    folder.mkdir()
    shutil.copy(digits_cpu / "manifest.json", folder)
    _error(_cli("run", folder, "--device", "fsim"), "has no graph.json", "recompile")
