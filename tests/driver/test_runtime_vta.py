"""driver.runtime on accelerator modules: "vta" calls beside CPU kernels, counters, checks,
and a deployment that imports neither the compiler nor llvmlite nor onnx.

The module here is made by hand (no quantizer, no partition): an accelerator residual-add
program (``topi.vta.add_program``) adds two packed int8 inputs into a slot, then a CPU
kernel dequantizes that slot into the float32 output::

    a, b: int8[1, 1, 2, 2, 1, 4]  --vta add (programs/n0.vtaprog)-->  slot 0: int8[16]
    slot 0  --kernel dequant: y[i] = float32(s0[i]) * 0.5-->  slot 1: y float32[16]
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from compiler import te
from compiler.codegen.llvm.target import host_target
from compiler.graph_lower import CompiledModel, link_library
from compiler.graph_lower.build import cpu_record
from compiler.tir import lower
from compiler.topi.vta import add_program
from driver.runtime import RuntimeModuleError, load_module
from vta_hw.config import load_config

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DIGITS = os.path.join(ROOT, "examples", "digits", "digits_cnn.onnx")
PRESET = "1x4_i8w8a32_10_10_10_11_bus32"
PACKED = [1, 1, 2, 2, 1, 4]          # (N/B, C/BI, H, W, B, BI) of a (1, 4, 2, 2) tensor


def hand_made_module() -> CompiledModel:
    cfg = load_config(PRESET)
    prog = add_program(cfg, (1, 4, 2, 2)).program
    assert [b.name for b in prog.buffers if b.kind == "input"] == ["lhs", "rhs"]
    s0 = te.placeholder((16,), "int8", "s0")
    y = te.compute((16,), lambda i: te.cast(s0[i], "float32") * 0.5, "y")
    tgt = host_target()
    library = link_library([lower(te.create_schedule(y), [s0, y], "dequant")], tgt,
                           fp_contract=False)
    graph = {
        "inputs": [{"name": "a", "shape": PACKED, "dtype": "int8"},
                   {"name": "b", "shape": PACKED, "dtype": "int8"}],
        "outputs": [{"name": "y", "shape": [16], "dtype": "float32",
                     "ref": {"kind": "slot", "slot": 1}}],
        "slots": [64, 64], "workspace_bytes": 0,
        "calls": [{"kind": "vta", "program": "programs/n0.vtaprog",
                   "inputs": [{"buffer": "lhs", "ref": {"kind": "input", "index": 0}},
                              {"buffer": "rhs", "ref": {"kind": "input", "index": 1}}],
                   "outputs": [{"buffer": "out", "ref": {"kind": "slot", "slot": 0}}],
                   "node": "add0"},
                  {"kind": "kernel", "kernel": "dequant",
                   "args": [{"kind": "slot", "slot": 0}, {"kind": "slot", "slot": 1}],
                   "node": "dequant0"}],
        "kernels": {"dequant": [{"shape": [16], "dtype": "int8"},
                                {"shape": [16], "dtype": "float32"}]},
    }
    return CompiledModel(graph, {"kernels.so": library}, {}, {"kernels": 1, "calls": 2},
                         targets=[str(tgt), "vta"], cpu=cpu_record(tgt),
                         programs={"programs/n0.vtaprog": prog},
                         vta={"config": cfg.to_dict(), "config_name": cfg.name})


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(-50, 50, PACKED).astype(np.int8) for _ in range(2)]


def expected(a, b):
    return (a.astype(np.float32) + b).reshape(-1) * 0.5


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("vta") / "add.vtamod"
    hand_made_module().save(str(path))
    return path


@pytest.mark.parametrize("device", ["fsim", "tsim"])
def test_runs_from_memory_with_counters(device):
    m = load_module(hand_made_module(), device=device)
    a, b = inputs()
    np.testing.assert_array_equal(m(a, b)[0], expected(a, b))
    m.run()
    st = m.stats()
    assert st["device"] == device and st["runs"] == 2
    assert set(st["layers"]) == {"add0"} and st["layers"]["add0"]["runs"] == 2
    assert st["dram_bytes"] > 0 and st["layers"]["add0"]["dram_bytes"] == st["dram_bytes"]
    if device == "tsim":
        assert st["cycles"] > 0 and 0 < st["gemm_utilization"] <= 1
    else:   # no timing on the functional simulator: no figures, not zeros
        assert st["cycles"] is None and st["gemm_utilization"] is None
    calls = m.trace(*inputs(1))
    assert [c["node"] for c, _ in calls] == ["add0", "dequant0"]
    np.testing.assert_array_equal(calls[1][1], expected(*inputs(1)))


def test_saved_folder_hashes_programs_and_defaults_to_tsim(saved):
    man = json.loads((saved / "manifest.json").read_text())
    assert man["targets"][-1] == "vta" and man["vta"]["config_name"] == PRESET
    assert "programs/n0.vtaprog" in man["files"]
    m = load_module(saved)
    assert m.device.backend_name == "tsim" and m.kind == "vta"
    a, b = inputs(2)
    np.testing.assert_array_equal(m(a, b)[0], expected(a, b))
    assert m.stats()["cycles"] > 0


def test_accelerator_module_errors(saved, tmp_path):
    bad = tmp_path / "bad.vtamod"
    shutil.copytree(saved, bad)
    prog = bytearray((bad / "programs" / "n0.vtaprog").read_bytes())
    prog[-1] ^= 1
    (bad / "programs" / "n0.vtaprog").write_bytes(bytes(prog))
    with pytest.raises(RuntimeModuleError, match=r"programs/n0.vtaprog.*sha256 differs.*recompile"):
        load_module(bad)
    (bad / "programs" / "n0.vtaprog").unlink()
    with pytest.raises(RuntimeModuleError, match=r"has no programs/n0.vtaprog.*vta compile"):
        load_module(bad)
    from driver.device import Device
    with pytest.raises(Exception, match="device backend must be one of"):
        load_module(saved, device="nope")
    dev = Device("fsim", config=load_config(PRESET))
    m = load_module(saved, device=dev)
    assert m.device is dev


BLOCKED = r"""
import importlib.abc, sys

class Block(importlib.abc.MetaPathFinder):
    '''Refuses compiler, llvmlite and onnx (and their submodules): a deployment has none.'''
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("compiler", "llvmlite", "onnx", "onnxruntime"):
            raise ImportError(f"blocked import of {name}")
        return None

sys.meta_path.insert(0, Block())
import numpy as np
from driver.runtime import load_module
cpu = load_module(sys.argv[1])
x = np.load(sys.argv[3])
np.save(sys.argv[4], cpu(x)[0])
for device in ("fsim", "tsim"):
    acc = load_module(sys.argv[2], device=device)
    a, b = np.load(sys.argv[5]), np.load(sys.argv[6])
    np.save(sys.argv[7].replace("DEV", device), acc(a, b)[0])
    assert acc.stats()["runs"] == 1
loaded = [k for k in sys.modules if k.split(".")[0] in ("compiler", "llvmlite", "onnx")]
assert not loaded, loaded
print("ok")
"""


def test_cpu_and_accelerator_modules_run_with_compiler_llvmlite_onnx_blocked(saved, tmp_path):
    from compiler import build_model
    cpu = tmp_path / "digits.vtamod"
    cm = build_model(DIGITS)
    cm.save(str(cpu))
    x = np.random.default_rng(5).random((1, 1, 8, 8)).astype("float32")
    a, b = inputs(3)
    for name, v in (("x", x), ("a", a), ("b", b)):
        np.save(tmp_path / f"{name}.npy", v)
    proc = subprocess.run([sys.executable, "-c", BLOCKED, str(cpu), str(saved),
                           str(tmp_path / "x.npy"), str(tmp_path / "y.npy"),
                           str(tmp_path / "a.npy"), str(tmp_path / "b.npy"),
                           str(tmp_path / "z_DEV.npy")],
                          capture_output=True, text=True, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=ROOT))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), load_module(cm)(x)[0])
    for device in ("fsim", "tsim"):
        np.testing.assert_array_equal(np.load(tmp_path / f"z_{device}.npy"), expected(a, b))
