"""The AOT executor (compiler/graph_lower/aot.py): one C entry over the graph executor's
kernels and memory plan, loaded by driver.runtime.load_module."""
from __future__ import annotations

import ctypes
import json
import os
import re

import numpy as np
import pytest

from compiler.build_model import build_model
from compiler.graph import Graph, Op, input_node, make
from compiler.graph_lower.aot import ALIGN, STATUS_MISALIGNED, STATUS_NULL, workspace_layout
from compiler.graph_lower.module_file import manifest_digest
from driver.runtime import AotModule, GraphModule, RuntimeModuleError, load_module
from tests.elf_util import exported

DIGITS = "examples/digits/digits_cnn.onnx"


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    """(graph-executor module, saved AOT module folder) of the digits CNN."""
    folder = str(tmp_path_factory.mktemp("aot") / "digits_aot.vtamod")
    build_model(DIGITS, executor="aot").save(folder)
    return build_model(DIGITS), folder


def _images(n=4):
    return np.random.default_rng(0).uniform(0, 1, (n, 1, 1, 8, 8)).astype(np.float32)


def test_aot_module_equals_graph_executor(digits):
    graph_cm, folder = digits
    g, a = load_module(graph_cm), load_module(folder)
    assert isinstance(a, AotModule) and type(g) is GraphModule
    for x in _images():
        np.testing.assert_array_equal(a(x)[0], g(x)[0])
    assert a.output_info() == g.output_info() and a.input_info() == g.input_info()


def test_manifest_states_entry_workspace_and_constants(digits):
    graph_cm, folder = digits
    man = json.load(open(os.path.join(folder, "manifest.json")))
    assert man["executor"] == "aot" and man["aot"]["entry"] == "vtamod_run"
    assert set(man["files"]) == {"graph.json", "params.npz", "model.so", "model.h"}
    # the constants are the graph executor's packed parameters, now inside model.so
    assert man["aot"]["constant_bytes"] == sum(max(v.nbytes, 1) for v in graph_cm.params.values())
    gj = graph_cm.graph_json
    assert man["aot"]["workspace_bytes"] == workspace_layout(gj)["bytes"] >= sum(gj["slots"])
    header = open(os.path.join(folder, "model.h")).read()
    assert f"#define VTAMOD_WORKSPACE_BYTES {man['aot']['workspace_bytes']}u" in header
    assert "#define VTAMOD_INPUT0_BYTES 256u" in header and "#define VTAMOD_OUTPUT0_BYTES 40u" in header
    assert "#define VTAMOD_INPUT0_SHAPE {1, 1, 8, 8}" in header
    assert "int32_t vtamod_run(void *const *inputs, void *const *outputs, void *workspace);" in header


def test_same_kernels_as_graph_executor_exports_only_prefixed_names(digits):
    """No second copy of the kernels: the AOT plan names the graph executor's calls; the
    library keeps them internal and exports the entry and its constants alone, each
    starting with vtamod_ (so two models link into one program)."""
    graph_cm, folder = digits
    aot_plan = json.load(open(os.path.join(folder, "graph.json")))
    assert [c["kernel"] for c in aot_plan["calls"]] == [c["kernel"] for c in graph_cm.graph_json["calls"]]
    names = exported(os.path.join(folder, "model.so"))
    assert "vtamod_run" in names and all(n.startswith("vtamod_") for n in names), names
    assert names - {"vtamod_run"} == {f"vtamod_c{i}" for i in range(len(graph_cm.params))}


def test_entry_rejects_null_and_misaligned_pointers(digits):
    _, folder = digits
    m = load_module(folder)
    fn = m._lib.vtamod_run
    ws = np.zeros(m.workspace_bytes + 2 * ALIGN, np.uint8)
    base = ws.ctypes.data + (-ws.ctypes.data) % ALIGN
    x = np.zeros(64 + ALIGN // 4, np.float32)
    xp = x.ctypes.data + (-x.ctypes.data) % ALIGN
    y = np.zeros(10 + ALIGN // 4, np.float32)
    yp = y.ctypes.data + (-y.ctypes.data) % ALIGN
    ins, outs = (ctypes.c_void_p * 1)(xp), (ctypes.c_void_p * 1)(yp)
    assert fn(ins, outs, None) == STATUS_NULL
    assert fn(ins, None, base) == STATUS_NULL
    assert fn(ins, outs, base + 4) == STATUS_MISALIGNED
    assert fn((ctypes.c_void_p * 1)(xp + 4), outs, base) == STATUS_MISALIGNED
    assert fn(ins, outs, base) == 0


def test_aot_from_memory_and_no_trace(digits):
    m = load_module(build_model(DIGITS, executor="aot"))
    x = _images(1)[0]
    np.testing.assert_array_equal(m(x)[0], load_module(digits[0])(x)[0])
    with pytest.raises(RuntimeModuleError, match="AOT module .*--executor graph to trace"):
        m.trace(x)


def test_workspace_layout_aligns_every_slot():
    lay = workspace_layout({"slots": [10, 64, 65], "workspace_bytes": 1})
    assert lay == {"slots": [0, 64, 128], "scratch": 256, "bytes": 320}


def test_executor_errors():
    with pytest.raises(ValueError, match="executor must be 'graph' or 'aot'.*not 'jit'"):
        build_model(DIGITS, executor="jit")
    with pytest.raises(ValueError, match="executor 'aot' builds CPU modules.*not target 'cuda'"):
        build_model(DIGITS, target="cuda", executor="aot")


def test_entry_and_kernels_allocate_nothing(digits):
    """The library's undefined symbols: no allocator (libgomp's and libc's memcpy at most;
    the digits CNN's kernels are too small to fork-join)."""
    import shutil
    import subprocess
    if shutil.which("nm") is None:
        pytest.skip("nm is not installed (Debian: apt-get install binutils)")
    _, folder = digits
    out = subprocess.run(["nm", "-D", "--undefined-only", os.path.join(folder, "model.so")],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    undefined = {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}
    assert not undefined & {"malloc", "calloc", "realloc", "aligned_alloc", "posix_memalign", "free"}


def test_manifest_executor_checked_on_load(digits, tmp_path):
    import shutil
    _, folder = digits
    copy = tmp_path / "m.vtamod"
    shutil.copytree(folder, copy)
    man = json.load(open(copy / "manifest.json"))

    def write(doc):   # an edited manifest with its digest made to match (integrity is not
        doc = dict(doc, digest=manifest_digest(doc))   # what this test is about)
        json.dump(doc, open(copy / "manifest.json", "w"))
    write(dict(man, executor="jit"))
    with pytest.raises(RuntimeModuleError, match="executor 'jit', this runtime runs 'graph', 'aot'"):
        load_module(str(copy))
    write({k: v for k, v in man.items() if k != "aot"})
    with pytest.raises(RuntimeModuleError, match="no complete 'aot' entry.*--executor aot"):
        load_module(str(copy))


BLOCKED = r"""
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("compiler", "llvmlite", "onnx"):
            raise ImportError(f"blocked import of {name}")
        return None
sys.meta_path.insert(0, Block())
import numpy as np
from driver.runtime import load_module
m = load_module(sys.argv[1])
np.save(sys.argv[3], m(np.load(sys.argv[2]))[0])
print(type(m).__name__)
"""


def test_aot_module_runs_without_compiler_llvmlite_onnx(digits, tmp_path):
    import subprocess
    import sys
    graph_cm, folder = digits
    x = _images(1)[0]
    np.save(tmp_path / "x.npy", x)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    proc = subprocess.run([sys.executable, "-c", BLOCKED, folder, str(tmp_path / "x.npy"),
                           str(tmp_path / "y.npy")], capture_output=True, text=True, cwd=root,
                          env=dict(os.environ, PYTHONPATH=root), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "AotModule"
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), load_module(graph_cm)(x)[0])


@pytest.mark.parametrize("prefix", ["", "1x_", "_x", "a-b", "a b", 7])
def test_bad_aot_prefix_names_value_and_rule(prefix):
    graph = Graph((x := input_node("x", (1, 4)),), (make(Op.RELU, x),), ("y",))
    with pytest.raises(ValueError, match=re.escape(
            "aot_prefix must be the start of a C identifier: a letter, then letters, digits or "
            f"underscores (e.g. 'mnist_'), not {prefix!r}")):
        build_model(graph, executor="aot", aot_prefix=prefix)


def test_aot_prefix_needs_the_aot_executor():
    graph = Graph((x := input_node("x", (1, 4)),), (make(Op.RELU, x),), ("y",))
    with pytest.raises(ValueError, match="aot_prefix='m_' names the symbols of an AOT module, "
                       "not of executor 'graph'; add executor='aot' or drop it"):
        build_model(graph, aot_prefix="m_")
