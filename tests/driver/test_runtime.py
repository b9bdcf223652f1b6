"""driver.runtime: saving, loading and running compiled modules; deployment without the compiler."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from compiler.build_model import build_model
from compiler.graph import Graph, Op, input_node, make, param_node, run
from driver.runtime import RuntimeModuleError, load_module

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DIGITS = os.path.join(ROOT, "examples", "digits", "digits_cnn.onnx")


def small_graph():
    """conv + bias + relu -> global average pool -> reshape -> dense: three kernels."""
    rng = np.random.default_rng(0)
    params = {"w": rng.standard_normal((16, 3, 3, 3)).astype("float32"),
              "b": rng.standard_normal((16, 1, 1)).astype("float32"),
              "fc": rng.standard_normal((10, 16)).astype("float32")}
    x = input_node("x", (1, 3, 8, 8))
    y = make(Op.RELU, make(Op.ADD, make(Op.CONV2D, x, param_node("w", params["w"]), pads=(1, 1, 1, 1)),
                           param_node("b", params["b"])))
    y = make(Op.RESHAPE, make(Op.GLOBAL_AVG_POOL, y), newshape=(1, 16))
    y = make(Op.DENSE, y, param_node("fc", params["fc"]))
    return Graph((x,), (y,), ("logits",)), params


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    graph, params = small_graph()
    path = str(tmp_path_factory.mktemp("rt") / "small.vtamod")
    build_model(graph, params=params).save(path)
    return path, graph, params


def test_folder_layout_and_graph_json(saved):
    path, _, _ = saved
    assert sorted(os.listdir(path)) == ["graph.json", "kernels.so", "params.npz"]
    g = json.load(open(os.path.join(path, "graph.json")))
    assert g["format"] == "vtamod-1"
    assert [i["name"] for i in g["inputs"]] == ["x"] and g["outputs"][0]["name"] == "logits"
    assert all(c["kernel"] in g["kernels"] for c in g["calls"])


def test_set_input_run_get_output_matches_reference(saved):
    path, graph, params = saved
    m = load_module(path)
    x = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype("float32")
    m.set_input("x", x)
    m.run()
    expected = run(graph, params, {"x": x})[0]
    np.testing.assert_allclose(m.get_output(0), expected, rtol=1e-5, atol=1e-5)
    m.set_input(0, x * 2)               # by index; outputs are copies
    first = m.get_output(0)
    m.run()
    assert not np.allclose(first, m.get_output(0))
    np.testing.assert_allclose(m(x)[0], expected, rtol=1e-5, atol=1e-5)
    assert m.benchmark(repeat=2)["median_s"] > 0


def test_input_errors_name_the_problem(saved):
    m = load_module(saved[0])
    with pytest.raises(RuntimeModuleError, match=r"no input named 'y'; inputs: x"):
        m.set_input("y", np.zeros((1, 3, 8, 8)))
    with pytest.raises(RuntimeModuleError, match=r"shape \[1, 3, 4, 4\].*compiled for \[1, 3, 8, 8\].*--input-shape x:1x3x4x4"):
        m.set_input("x", np.zeros((1, 3, 4, 4)))
    with pytest.raises(RuntimeModuleError, match="output index 3 out of range"):
        m.get_output(3)


def test_load_errors(tmp_path, saved):
    with pytest.raises(RuntimeModuleError, match="not a compiled module folder"):
        load_module(str(tmp_path / "nothing"))
    broken = tmp_path / "broken.vtamod"
    broken.mkdir()
    (broken / "graph.json").write_text("{}")
    with pytest.raises(RuntimeModuleError, match="has no kernels.so"):
        load_module(str(broken))
    src = saved[0]
    for f in ("kernels.so", "params.npz"):
        (broken / f).write_bytes(open(os.path.join(src, f), "rb").read())
    with pytest.raises(RuntimeModuleError, match="format None.*recompile"):
        load_module(str(broken))
    g = json.load(open(os.path.join(src, "graph.json")))
    g["calls"][0]["kernel"] = "no_such_kernel"
    g["kernels"]["no_such_kernel"] = g["kernels"][next(iter(g["kernels"]))]
    (broken / "graph.json").write_text(json.dumps(g))
    with pytest.raises(RuntimeModuleError, match="kernel 'no_such_kernel'.*not in"):
        load_module(str(broken))


BLOCKED_LOADER = r"""
import sys
for name in ("llvmlite", "llvmlite.binding", "llvmlite.ir", "onnx", "onnxruntime", "compiler"):
    sys.modules[name] = None          # any import of these now raises ImportError
import numpy as np
from driver.runtime import load_module
m = load_module(sys.argv[1])
x = np.load(sys.argv[2])
m.set_input(0, x)
m.run()
np.save(sys.argv[3], m.get_output(0))
assert not any(k.startswith(("llvmlite", "onnx", "compiler")) and sys.modules[k] is not None
               for k in sys.modules)
print("ok")
"""


def test_loads_and_runs_without_llvmlite_onnx_or_compiler(tmp_path):
    path = str(tmp_path / "digits.vtamod")
    build_model(DIGITS).save(path)
    x = np.random.default_rng(2).random((1, 1, 8, 8)).astype("float32")
    np.save(tmp_path / "x.npy", x)
    proc = subprocess.run([sys.executable, "-c", BLOCKED_LOADER, path, str(tmp_path / "x.npy"),
                           str(tmp_path / "y.npy")], capture_output=True, text=True, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=ROOT))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
    import onnxruntime as ort
    ref = ort.InferenceSession(DIGITS, providers=["CPUExecutionProvider"]).run(None, {"image": x})[0]
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), ref, rtol=1e-4, atol=1e-5)


def test_equal_layers_share_one_kernel():
    # two identical conv blocks (different weights): one kernel, two calls
    rng = np.random.default_rng(3)
    x = input_node("x", (1, 16, 8, 8))
    params, y = {}, x
    for i in range(2):
        params[f"w{i}"] = rng.standard_normal((16, 16, 3, 3)).astype("float32")
        y = make(Op.RELU, make(Op.CONV2D, y, param_node(f"w{i}", params[f"w{i}"]), pads=(1, 1, 1, 1)))
    cm = build_model(Graph((x,), (y,), ("y",)), params=params)
    assert (cm.stats["kernels"], cm.stats["calls"]) == (1, 2)
