"""The C harness (driver/aot/harness.c) for AOT modules: built for x86-64, and for AArch64
and ARMv7 with Debian's cross compilers, run under qemu-user; outputs equal the x86-64
module's. Machines without a toolchain skip with the package to install."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

from compiler.build_model import build_model
from driver.aot import DeployError, Toolchain, build_harness, run_harness, toolchain_for
from driver.runtime import load_module
from tests.models import builders

DIGITS = "examples/digits/digits_cnn.onnx"
CROSS = ("aarch64", "armv7")


def _need(arch: str) -> None:
    why = toolchain_for(arch).missing()
    if why:
        pytest.skip(why)


def _aot(model, target, folder) -> str:
    build_model(model, target=target, executor="aot").save(str(folder))
    return str(folder)


@pytest.fixture(scope="module")
def digits_host(tmp_path_factory):
    """(AOT module folder, its harness) of the digits CNN for this machine."""
    _need("x86_64")
    folder = _aot(DIGITS, "llvm", tmp_path_factory.mktemp("h") / "digits.vtamod")
    return folder, build_harness(folder, tmp_path_factory.mktemp("exe") / "digits")


def _images(n=3):
    return np.random.default_rng(1).uniform(0, 1, (n, 1, 1, 8, 8)).astype(np.float32)


def test_host_harness_equals_python_runtime(digits_host):
    folder, exe = digits_host
    m = load_module(folder)
    for x in _images():
        y, = run_harness(exe, folder, [x])
        np.testing.assert_array_equal(y, m(x)[0])


@pytest.mark.parametrize("arch", CROSS)
def test_cross_harness_under_qemu_matches_x86(arch, digits_host, tmp_path):
    _need(arch)
    folder = _aot(DIGITS, arch, tmp_path / f"digits_{arch}.vtamod")
    exe = build_harness(folder, tmp_path / "digits")
    ref = load_module(digits_host[0])
    for x in _images():
        y, = run_harness(exe, folder, [x])
        np.testing.assert_allclose(y, ref(x)[0], rtol=1e-5, atol=1e-5)
        assert y.argmax() == ref(x)[0].argmax()


@pytest.mark.slow
@pytest.mark.parametrize("arch", CROSS)
def test_resnet18_under_qemu_matches_x86(arch, tmp_path):
    """ResNet-18 at 32x32 (every layer kind of the 224 model; ~40 s: two compiles)."""
    _need(arch)
    model = builders.build_resnet18(size=32)
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    ref = load_module(build_model(model, executor="aot"))(x)[0]
    folder = _aot(model, arch, tmp_path / f"r18_{arch}.vtamod")
    y, = run_harness(build_harness(folder, tmp_path / "r18"), folder, [x], timeout_s=900)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


def _run(exe, *args):
    return subprocess.run([exe, *map(str, args)], capture_output=True, text=True, timeout=60)


def test_bad_input_files_give_status_and_message(digits_host, tmp_path):
    _, exe = digits_host
    good, short, out = tmp_path / "x.bin", tmp_path / "short.bin", tmp_path / "y.bin"
    np.zeros((1, 1, 8, 8), np.float32).tofile(good)
    np.zeros(10, np.float32).tofile(short)
    res = _run(exe, short, out)
    assert res.returncode == 4 and "input 0 'image'" in res.stderr
    assert "holds 40 bytes, the model takes 256 (float32[1, 1, 8, 8])" in res.stderr
    res = _run(exe, tmp_path / "missing.bin", out)
    assert res.returncode == 3 and "cannot open" in res.stderr and "missing.bin" in res.stderr
    np.zeros(65, np.float32).tofile(short)
    assert _run(exe, short, out).returncode == 4
    res = _run(exe, good)
    assert res.returncode == 2 and "1 file argument(s), the model takes 1 input and 1 output" in res.stderr
    res = _run(exe, good, tmp_path / "no" / "such" / "dir.bin")
    assert res.returncode == 5 and "cannot write" in res.stderr
    assert _run(exe, good, out).returncode == 0 and out.stat().st_size == 40


def test_run_harness_reports_the_status(digits_host):
    folder, exe = digits_host
    with pytest.raises(DeployError, match=r"takes 1 input\(s\) \(image\), not 2"):
        run_harness(exe, folder, [_images(1)[0]] * 2)
    with pytest.raises(DeployError, match=r"input 'image' has shape \[1, 64\]"):
        run_harness(exe, folder, [np.zeros((1, 64), np.float32)])


def test_missing_toolchain_names_its_package():
    tc = Toolchain("aarch64", "no-such-aarch64-gcc", "gcc-aarch64-linux-gnu", "qemu-aarch64",
                   "qemu-user")
    with pytest.raises(DeployError, match="no-such-aarch64-gcc .*apt-get install gcc-aarch64-linux-gnu"):
        tc.require()
    tc = Toolchain("armv7", "cc", "gcc", "no-such-qemu-arm", "qemu-user")
    with pytest.raises(DeployError, match="emulator no-such-qemu-arm .*apt-get install qemu-user"):
        tc.require()
    with pytest.raises(DeployError, match="no C toolchain for triple 'riscv64-linux-gnu'"):
        toolchain_for("riscv64-linux-gnu")


def test_graph_module_is_not_an_aot_module(tmp_path):
    folder = str(tmp_path / "g.vtamod")
    build_model(DIGITS).save(folder)
    with pytest.raises(DeployError, match="not an AOT module .*--executor aot"):
        build_harness(folder, tmp_path / "exe")


def test_cli_compile_executor_aot(tmp_path):
    from click.testing import CliRunner

    from driver.cli.main import cli
    out = str(tmp_path / "d_a64.vtamod")
    res = CliRunner().invoke(cli, ["compile", DIGITS, "--executor", "aot", "--target", "aarch64",
                                   "-o", out, "--quiet"])
    assert res.exit_code == 0, res.output
    assert "AOT entry vtamod_run in model.o (declared in model.h)" in res.output
    assert (tmp_path / "d_a64.vtamod" / "model.o").is_file()
    res = CliRunner().invoke(cli, ["compile", DIGITS, "--executor", "aot", "--target", "vta",
                                   "-o", str(tmp_path / "v.vtamod")])
    assert res.exit_code != 0 and "--executor aot builds CPU modules" in res.output
    res = CliRunner().invoke(cli, ["compile", "--help"])
    assert "--executor [graph|aot]" in res.output
