"""One module for several x86-64 levels (``compiler/graph_lower/fleet.py``): one plan, kernel
library and parameter set per ``-mcpu`` entry, the loader picking the best the host runs
(``driver/runtime/variants.py``), every variant computing what a one-CPU build computes."""
from __future__ import annotations

import contextlib
import json

import numpy as np
import pytest

from compiler import build_model
from driver.runtime import cpu_features, load_module
from driver.runtime.errors import RuntimeModuleError
from tests.machines import as_host
from vta_hw.errors import ArgumentError
from vta_hw.host_cpu import OS_NAME, X86_LEVELS, best_level, read_os_flags

DIGITS = "examples/digits/digits_cnn.onnx"
LEVELS = ["x86-64-v2", "x86-64-v3", "x86-64-v4"]
FLEET = "llvm -mcpu=" + ",".join(LEVELS)


def level_flags(level: str) -> frozenset:
    """The /proc/cpuinfo flags of a CPU with exactly the features of x86-64 ``level``."""
    names = list(X86_LEVELS)
    return frozenset(OS_NAME[f] for lv in names[:names.index(level) + 1] for f in X86_LEVELS[lv])


@contextlib.contextmanager
def as_level(level: str):
    """Within: the runtime sees a host of exactly ``level``."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cpu_features, "host_cpu_flags", lambda: level_flags(level))
        yield


def runnable_here() -> list:
    """The levels this machine's CPU executes (every project machine has AVX2: v2, v3)."""
    here = best_level(read_os_flags())
    return LEVELS[:LEVELS.index(here) + 1] if here in LEVELS else []


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    path = tmp_path_factory.mktemp("fleet") / "digits.vtamod"
    cm = build_model(DIGITS, target=FLEET)
    cm.save(str(path))
    return cm, str(path)


def x_digits():
    return np.random.default_rng(1).random((1, 1, 8, 8), np.float32)


def test_the_manifest_lists_every_variant_and_the_parts_that_differ(fleet):
    cm, path = fleet
    man = json.load(open(f"{path}/manifest.json"))
    assert [v["name"] for v in man["variants"]] == LEVELS
    assert man["cpu"] == man["variants"][0]["cpu"]             # old loaders run the first
    counts = [len(v["cpu"]["features"]) for v in man["variants"]]
    assert counts == sorted(counts) and counts[0] < counts[-1]
    for v in man["variants"][1:]:
        assert v["files"]["kernels.so"] == f"variants/{v['name']}/kernels.so"
        assert v["files"]["kernels.so"] in man["files"]        # hashed like every part
    assert set(cm.stats["variants"]) == set(LEVELS)


@pytest.mark.parametrize("machine, picked", [
    ("zen1_epyc_vm", "x86-64-v3"), ("vm_cascadelake_avx512_hidden", "x86-64-v3"),
    ("zen4_epyc", "x86-64-v4"), ("zen5_epyc_rdseed_hidden", "x86-64-v4"),
    ("sapphirerapids_amx", "x86-64-v4")])
def test_the_loader_picks_the_best_variant_the_host_runs(fleet, machine, picked):
    with as_host(machine, compile_side=False):
        m = load_module(fleet[1])
    assert m.stats()["cpu_variant"] == picked and m.cpu_variant == picked


def test_a_host_below_every_variant_is_refused_with_each_reason(fleet):
    with as_host("zen1_epyc_vm", compile_side=False), pytest.MonkeyPatch.context() as mp:
        mp.setattr(cpu_features, "host_cpu_flags", lambda: frozenset({"sse", "sse2", "cmov"}))
        with pytest.raises(RuntimeModuleError, match=r"none of the 3 CPU variants \(x86-64-v2, "
                           r"x86-64-v3, x86-64-v4\) runs here: .*variant x86-64-v2\): needs "
                           r"CPU feature .*--target 'llvm -mcpu=x86-64'"):
            load_module(fleet[1])


def test_every_variant_this_machine_runs_computes_the_one_cpu_build(fleet):
    levels = runnable_here()
    assert {"x86-64-v2", "x86-64-v3"} <= set(levels)          # every project machine: AVX2
    want, = load_module(build_model(DIGITS, target="llvm"))(x_digits())
    for level in levels:
        with as_level(level):
            for src in fleet:                                   # from memory and from disk
                m = load_module(src)
                assert m.cpu_variant == level
                got, = m(x_digits())
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_int8_variants_agree_bit_exactly():
    calib = {"image": np.load("examples/digits/calib.npz")["images"][:32, None]
             .astype(np.float32) / 16}
    cm = build_model(DIGITS, target="llvm -mcpu=x86-64-v2,x86-64-v3", quantize="int8",
                     calib=calib)
    outs = []
    for level in runnable_here()[:2]:
        with as_level(level):
            m = load_module(cm)
            assert m.cpu_variant == level
            outs.append(m(x_digits())[0])
    assert len(outs) == 2 and np.array_equal(outs[0], outs[1])


def test_an_accelerator_fleet_shares_its_programs():
    cm = build_model(DIGITS, target="vta", input_shapes={"image": (1, 1, 8, 8)},
                     calib={"image": np.load("examples/digits/calib.npz")["images"][:32, None]
                            .astype(np.float32) / 16},
                     cpu_target="llvm -mcpu=x86-64-v2,x86-64-v3")
    v2, v3 = cm.variants
    progs = [p for p in v3["files"] if p.startswith("programs/")]
    assert progs and all(v3["files"][p] == p for p in progs)   # stored once
    assert v3["files"]["kernels.so"].startswith("variants/x86-64-v3/")
    outs = []
    for level in ("x86-64-v2", "x86-64-v3"):
        with as_level(level):
            m = load_module(cm, device="fsim")
            assert m.stats()["cpu_variant"] == level
            outs.append(m(x_digits())[0])
    assert np.array_equal(outs[0], outs[1])


@pytest.mark.parametrize("target, kw, msg", [
    (FLEET, {"executor": "aot"}, r"executor 'aot' builds one object for the one CPU"),
    ("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1,neoverse-v1", {},
     r"cross targets \(aarch64, armv7, wasm32\) get one object per triple"),
    ("llvm -mcpu=x86-64-v2,x86-64-v2", {}, r"x86-64-v2 is listed twice"),
    ("llvm -mcpu=x86-64-v2,", {}, r"an empty entry in the list"),
])
def test_cpu_lists_that_cannot_make_one_module_are_refused(target, kw, msg):
    with pytest.raises(ArgumentError, match=msg):
        build_model(DIGITS, target=target, **kw)


def test_a_manifest_naming_one_variant_twice_is_refused(fleet, tmp_path):
    import shutil

    from compiler.graph_lower.module_file import manifest_digest
    path = tmp_path / "twice.vtamod"
    shutil.copytree(fleet[1], path)
    man = json.load(open(path / "manifest.json"))
    man["variants"][2]["name"] = man["variants"][1]["name"]
    man["digest"] = manifest_digest(man)         # consistent, so only the content check catches it
    (path / "manifest.json").write_text(json.dumps(man))
    with pytest.raises(RuntimeModuleError, match=r"CPU variant 'x86-64-v3' is listed twice"):
        load_module(str(path))
