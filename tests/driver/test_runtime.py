"""driver.runtime: saving, loading and running compiled modules; deployment without the compiler."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from compiler import build_model
from compiler.graph import Graph, Op, input_node, make, param_node, run
from driver.runtime import RuntimeModuleError, load_module
from driver.runtime.source import manifest_digest

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


def test_folder_layout_manifest_and_graph_json(saved):
    path, _, _ = saved
    assert sorted(os.listdir(path)) == ["graph.json", "kernels.so", "manifest.json", "params.npz"]
    man = json.load(open(os.path.join(path, "manifest.json")))
    assert (man["format"], man["version"], man["executor"]) == ("vtamod", 3, "graph")
    assert len(man["targets"]) == 1 and man["targets"][0].startswith("llvm -mtriple=")
    assert man["cpu"]["triple"] in man["targets"][0] and "vta" not in man
    assert all(f.startswith("+") for f in man["cpu"]["features"])
    assert sorted(man["files"]) == ["graph.json", "kernels.so", "params.npz"]
    for name, digest in man["files"].items():
        data = open(os.path.join(path, name), "rb").read()
        assert digest == "sha256:" + hashlib.sha256(data).hexdigest()
    assert man["inputs"] == [{"name": "x", "shape": [1, 3, 8, 8], "dtype": "float32"}]
    g = json.load(open(os.path.join(path, "graph.json")))
    assert "format" not in g
    assert [i["name"] for i in g["inputs"]] == ["x"] and g["outputs"][0]["name"] == "logits"
    assert all(c["kind"] == "kernel" and c["kernel"] in g["kernels"] for c in g["calls"])


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
    with pytest.raises(RuntimeModuleError, match="nothing' does not exist"):
        load_module(str(tmp_path / "nothing"))
    (tmp_path / "afile").write_text("x")
    with pytest.raises(RuntimeModuleError, match="not a compiled module folder"):
        load_module(str(tmp_path / "afile"))
    src = saved[0]
    broken = tmp_path / "broken.vtamod"
    shutil.copytree(src, broken)
    (broken / "kernels.so").unlink()
    with pytest.raises(RuntimeModuleError, match="has no kernels.so.*recompile"):
        load_module(str(broken))
    shutil.copy(os.path.join(src, "kernels.so"), broken / "kernels.so")
    man = json.load(open(broken / "manifest.json"))
    (broken / "manifest.json").write_text(json.dumps(dict(man, format=None)))
    with pytest.raises(RuntimeModuleError, match="format None.*recompile"):
        load_module(str(broken))
    # a graph that names a kernel the library lacks (hashes updated: a consistent but wrong module)
    g = json.load(open(os.path.join(src, "graph.json")))
    g["calls"][0]["kernel"] = "no_such_kernel"
    g["kernels"]["no_such_kernel"] = g["kernels"][next(iter(g["kernels"]))]
    data = json.dumps(g).encode()
    (broken / "graph.json").write_bytes(data)
    man["files"]["graph.json"] = "sha256:" + hashlib.sha256(data).hexdigest()
    man["digest"] = manifest_digest(man)
    (broken / "manifest.json").write_text(json.dumps(man))
    with pytest.raises(RuntimeModuleError, match="kernel 'no_such_kernel'.*not in"):
        load_module(str(broken))


def test_a_file_whose_hash_differs_is_named(tmp_path, saved):
    bad = tmp_path / "edited.vtamod"
    shutil.copytree(saved[0], bad)
    g = json.load(open(bad / "graph.json"))
    g["slots"] = [n * 2 for n in g["slots"]]         # still valid JSON, edited
    (bad / "graph.json").write_text(json.dumps(g))
    with pytest.raises(RuntimeModuleError) as e:
        load_module(str(bad))
    msg = str(e.value)
    assert "graph.json" in msg and "sha256 differs" in msg and "damaged or edited" in msg
    assert "recompile" in msg and "\n" not in msg
    shutil.copy(os.path.join(saved[0], "graph.json"), bad / "graph.json")
    lib = bytearray((bad / "kernels.so").read_bytes())
    lib[-1] ^= 1                                        # one bit of the library
    (bad / "kernels.so").write_bytes(bytes(lib))
    with pytest.raises(RuntimeModuleError, match=r"kernels.so.*sha256 differs.*recompile"):
        load_module(str(bad))


def test_missing_cpu_feature_is_one_line_naming_it(saved, monkeypatch):
    from driver.runtime import cpu_features
    man = json.load(open(os.path.join(saved[0], "manifest.json")))
    need = set(man["cpu"]["features"])
    # this machine as if it had only SSE2-era flags
    monkeypatch.setattr(cpu_features, "host_cpu_flags", lambda: frozenset(
        {"sse", "sse2", "fxsr", "mmx", "cmov", "cx8"}))
    if need & {"+avx2", "+avx512f", "+sse4.2"}:
        with pytest.raises(RuntimeModuleError) as e:
            load_module(saved[0])
        msg = str(e.value)
        assert "needs CPU feature" in msg and "which this machine lacks" in msg
        assert "--target 'llvm -mcpu=x86-64'" in msg and "\n" not in msg   # no v2 here
    # a module that records a feature the host lacks, by hand: named exactly
    monkeypatch.setattr(cpu_features, "host_cpu_flags", lambda: frozenset({"sse", "sse2", "avx2"}))
    with pytest.raises(RuntimeModuleError, match=r"needs CPU feature avx512f, which this machine "
                                                 r"lacks; it was built for x \(x86_64-unknown-"):
        cpu_features.check_cpu({"triple": "x86_64-unknown-linux-gnu", "cpu": "x",
                                "features": ["+avx2", "+avx512f", "+64bit"]}, "m.vtamod")
    # features without a known cpuinfo name are recorded, not checked
    cpu_features.check_cpu({"triple": "x86_64-unknown-linux-gnu", "cpu": "x",
                            "features": ["+avx2", "+64bit", "+some-new-thing"]}, "m.vtamod")
    # system features an older manifest lists (xsaves, rdseed: hidden by VMs and by Linux on
    # Zen 5) are not needs
    cpu_features.check_cpu({"triple": "x86_64-unknown-linux-gnu", "cpu": "x",
                            "features": ["+avx2", "+xsaves", "+rdseed"]}, "m.vtamod")
    from vta_hw.host_cpu import OS_NAME
    assert OS_NAME["sse3"] == "pni" and OS_NAME["avx512vnni"] == "avx512_vnni"


@pytest.mark.parametrize("triple, executor, advice", [
    ("wasm32-unknown-unknown", "graph", "compile with --executor aot --wasm FILE.wasm"),
    ("wasm32-unknown-unknown", "aot", "compile with --executor aot --wasm FILE.wasm"),
    ("aarch64-unknown-linux-gnu", "aot", "build its model.o into a program there"),
    ("aarch64-unknown-linux-gnu", "graph", "link its kernels.o there"),
])
def test_a_module_for_another_machine_says_how_to_run_it(monkeypatch, triple, executor, advice):
    from driver.runtime import cpu_features
    monkeypatch.setattr(cpu_features.platform, "machine", lambda: "x86_64")
    with pytest.raises(RuntimeModuleError) as e:
        cpu_features.check_cpu({"triple": triple, "cpu": "generic", "features": []}, "m.vtamod",
                               executor)
    assert advice in str(e.value)
    assert ("kernels.o" in str(e.value)) == (advice == "link its kernels.o there")


@pytest.mark.parametrize("fmt", ["vtamod-1", "vtamod-gpu-1", "vtamod-vta-1", "vtamod-vta-2"])
def test_earlier_formats_say_recompile(tmp_path, fmt):
    old = tmp_path / "old.vtamod"
    old.mkdir()
    (old / "graph.json").write_text(json.dumps({"format": fmt, "calls": []}))
    (old / "params.npz").write_bytes(b"")
    with pytest.raises(RuntimeModuleError) as e:
        load_module(str(old))
    assert str(e.value) == (f"{old}: written by an earlier version (format {fmt!r}); "
                            "recompile it with `vta compile`")


def test_newer_version_says_update(tmp_path, saved):
    new = tmp_path / "new.vtamod"
    shutil.copytree(saved[0], new)
    man = json.load(open(new / "manifest.json"))
    (new / "manifest.json").write_text(json.dumps(dict(man, version=4)))
    with pytest.raises(RuntimeModuleError, match="version 4, this runtime reads version 3; update"):
        load_module(str(new))


def test_runs_from_memory_without_save(saved):
    _, graph, params = saved
    cm = build_model(graph, params=params)
    m = load_module(cm)
    x = np.random.default_rng(4).standard_normal((1, 3, 8, 8)).astype("float32")
    np.testing.assert_allclose(m(x)[0], run(graph, params, {"x": x})[0], rtol=1e-5, atol=1e-5)
    assert m.stats()["device"] is None
    with pytest.raises(RuntimeModuleError, match="is a CPU module.*accelerator"):
        load_module(cm, device="tsim")


def test_save_replaces_a_module_and_refuses_another_folder(tmp_path, saved):
    _, graph, params = saved
    cm = build_model(graph, params=params)
    out = tmp_path / "m.vtamod"
    cm.save(str(out))
    (out / "stale.txt").write_text("old")
    cm.save(str(out))
    assert sorted(os.listdir(out)) == ["graph.json", "kernels.so", "manifest.json", "params.npz"]
    assert sorted(os.listdir(tmp_path)) == ["m.vtamod"]          # no partial or old folder left
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "keep.txt").write_text("mine")
    with pytest.raises(ValueError, match="holds no compiled module"):
        cm.save(str(tmp_path / "data"))
    assert os.listdir(tmp_path / "data") == ["keep.txt"]


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
