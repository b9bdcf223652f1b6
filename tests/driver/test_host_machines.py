"""Built here, runs here, on the views of real machines (``tests/fixtures/cpus``): the
compiler's "this machine" is what LLVM reports less what the kernel hides, the manifest
records code features only, and a module for a richer machine is refused naming the
feature, the machine it was built for and a target that runs here."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import build_model
from driver import runtime
from driver.runtime import cpu_features, load_module
from driver.runtime.errors import RuntimeModuleError
from tests.machines import MACHINES, as_host, host_target_of, os_flags
from vta_hw.host_cpu import CODE_FEATURES, best_level, missing

DIGITS = "examples/digits/digits_cnn.onnx"
X86 = [n for n, m in MACHINES.items() if m["triple"].startswith("x86_64")]
RICH = "sapphirerapids_amx"


@pytest.fixture(autouse=True)
def _no_amx_request(monkeypatch):
    """Asking the kernel for AMX tile state is this machine's business, not the view's."""
    monkeypatch.setattr(runtime, "request_amx", lambda where: None)


def test_the_fixtures_hold_the_machines_that_broke_modules():
    assert len(MACHINES) >= 6 and "graviton3_neoverse_v1" in MACHINES
    zen5, vm = MACHINES["zen5_epyc_rdseed_hidden"], MACHINES["vm_cascadelake_avx512_hidden"]
    assert zen5["llvm_features"]["rdseed"] and "rdseed" not in os_flags("zen5_epyc_rdseed_hidden")
    assert vm["llvm_features"]["avx512f"] and "avx512f" not in os_flags("vm_cascadelake_avx512_hidden")
    assert "amx_tile" in os_flags(RICH) and "sve" in os_flags("graviton3_neoverse_v1")


@pytest.mark.parametrize("name", X86)
def test_a_module_built_for_this_machine_loads_here(name):
    with as_host(name):
        tgt = host_target_of(name)
        cm = build_model(DIGITS, target="llvm")
        feats = cm.manifest()["cpu"]["features"]
        assert feats and all(f[0] == "+" and f[1:] in CODE_FEATURES for f in feats)
        # compiled without anything the kernel hides: "-rdseed" on Zen 5, "-avx512f" in the VM
        from vta_hw.host_cpu import hidden
        gone = [f for f, on in MACHINES[name]["llvm_features"].items()
                if on and hidden(f, os_flags(name))]
        assert all(f"-{f}" in tgt.features.split(",") and f"+{f}" not in feats for f in gone)
        assert ("rdseed" in gone) == (name == "zen5_epyc_rdseed_hidden")
        load_module(cm)                                   # checked and opened, not run
    if name == "vm_cascadelake_avx512_hidden":
        assert tgt.vector_bits == 256                     # AVX-512 hidden: AVX2 schedules


def test_zen5_modules_no_longer_need_rdseed():
    name = "zen5_epyc_rdseed_hidden"
    with as_host(name):
        # what milestone 2 wrote there: every CPUID feature, rdseed among them
        old = sorted("+" + f for f, on in MACHINES[name]["llvm_features"].items() if on)
        assert "+rdseed" in old
        cpu_features.check_cpu({"triple": "x86_64-unknown-linux-gnu", "cpu": "znver5",
                                "features": old}, "old.vtamod")


@pytest.fixture(scope="module")
def rich_module():
    with as_host(RICH):
        return build_model(DIGITS, target="llvm")


@pytest.mark.parametrize("name, lacking", [
    ("zen1_epyc_vm", "avx512f"), ("vm_cascadelake_avx512_hidden", "avx512f"),
    ("zen4_epyc", "amx-tile"), ("zen5_epyc_rdseed_hidden", "amx-tile"),
    ("emeraldrapids_vm", "amx-tile")])
def test_a_module_for_a_richer_machine_is_refused_with_a_target_that_runs(rich_module, name,
                                                                          lacking):
    with as_host(name, compile_side=False):
        with pytest.raises(RuntimeModuleError) as e:
            load_module(rich_module)
    msg = str(e.value)
    level = best_level(os_flags(name))
    gone = missing(rich_module.cpu["features"], os_flags(name))
    assert lacking in gone
    assert f"needs CPU feature {gone[0]}, which this machine lacks (and {len(gone) - 1} more" in msg
    assert "built for sapphirerapids (x86_64-unknown-linux-gnu)" in msg and "\n" not in msg
    assert f"--target 'llvm -mcpu={level}'" in msg
    # the target it names builds a module that loads there
    with as_host(name):
        load_module(build_model(DIGITS, target=f"llvm -mcpu={level}"))


def test_levels_follow_what_the_kernel_lists():
    assert best_level(os_flags("zen1_epyc_vm")) == "x86-64-v3"
    assert best_level(os_flags("vm_cascadelake_avx512_hidden")) == "x86-64-v3"
    assert best_level(os_flags("zen4_epyc")) == "x86-64-v4"
    assert best_level(frozenset({"sse", "sse2"})) == "x86-64"


def test_aarch64_hwcaps_are_the_view_there():
    name = "graviton3_neoverse_v1"
    from compiler.graph_lower.build import cpu_record
    tgt = host_target_of(name)
    rec = cpu_record(tgt)
    assert {"+sve", "+i8mm", "+dotprod", "+neon"} <= set(rec["features"])
    with as_host(name, compile_side=False):
        cpu_features.check_cpu(rec, "m.vtamod")
    # a Neoverse N1 (no SVE): refused, naming sve and the generic target
    flags = os_flags(name) - {"sve", "svei8mm", "svebf16"}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cpu_features, "host_cpu_flags", lambda: flags)
        mp.setattr(cpu_features, "host_machine", lambda: "aarch64")
        with pytest.raises(RuntimeModuleError, match=r"needs CPU feature sve, .*"
                                                     r"--target 'llvm -mcpu=generic'"):
            cpu_features.check_cpu(rec, "m.vtamod")
    # on an x86-64 host: another architecture, with where to run it
    with as_host("zen4_epyc", compile_side=False):
        with pytest.raises(RuntimeModuleError, match=r"compiled for aarch64.*this machine is "
                                                     r"x86_64; run it on that machine"):
            cpu_features.check_cpu(rec, "m.vtamod")


def test_built_on_this_machine_runs_on_this_machine():
    """The real host, no fixture: what "llvm" builds here loads and computes here."""
    cm = build_model(DIGITS, target="llvm")
    x = np.random.default_rng(0).random((1, 1, 8, 8), np.float32)
    y, = load_module(cm)(x)
    assert y.shape == (1, 10) and np.isfinite(y).all()
