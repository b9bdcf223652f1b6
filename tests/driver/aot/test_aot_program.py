"""An x86-64 C program linked against AOT modules, as docs/deploy.md says to build one:
model.so beside the program under its SONAME, rpath $ORIGIN, run from another working
directory; two models with two symbol prefixes in one program; the ELF records checked
by parsing them (tests/elf_util.py)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from compiler.build_model import build_model
from compiler.graph import Graph, Op, input_node, make, param_node
from driver.aot import build_harness, run_harness, toolchain_for
from driver.runtime import load_module
from tests.elf_util import dynamic, exported

DEPLOY = Path(__file__).resolve().parents[3] / "docs" / "deploy.md"


@pytest.fixture(autouse=True)
def _host_cc():
    why = toolchain_for("x86_64").missing()
    if why:
        pytest.skip(why)


def _dense(k: int, n: int, seed: int):
    """A one-kernel model ``y = relu(x @ w.T)``, x float32[1, k], y float32[1, n]; every
    such model's kernel is named ``k0_dense_relu``, whatever k and n."""
    w = np.random.default_rng(seed).standard_normal((n, k)).astype(np.float32)
    x = input_node("x", (1, k))
    return Graph((x,), (make(Op.RELU, make(Op.DENSE, x, param_node("w", w))),), ("y",)), {"w": w}


def _module(folder, k, n, seed, prefix) -> str:
    graph, params = _dense(k, n, seed)
    build_model(graph, params=params, executor="aot", aot_prefix=prefix).save(str(folder))
    return str(folder)


def _install(module: str, app: Path, name: str) -> None:
    """The recipe's two copies: the library under its SONAME, the header as <name>_model.h."""
    shutil.copyfile(os.path.join(module, "model.so"), app / f"lib{name}_model.so")
    shutil.copyfile(os.path.join(module, "model.h"), app / f"{name}_model.h")


def _cc(app: Path, source: Path, libs: list, exe: Path) -> None:
    """docs/deploy.md's command line: -I app, -L app -l<name>_model, rpath $ORIGIN."""
    cmd = [toolchain_for("x86_64").compiler(), "-O2", "-std=c11", "-Wall", "-I", str(app),
           str(source), "-L", str(app), *[f"-l{n}_model" for n in libs],
           "-Wl,-rpath,$ORIGIN", "-o", str(exe)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def _run(exe: Path, args: list, cwd: Path) -> np.ndarray:
    proc = subprocess.run([str(exe), *args], capture_output=True, text=True, cwd=cwd, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return np.array([float(v) for v in proc.stdout.split()], np.float32)


def _doc_main_c() -> str:
    """The ```c block of docs/deploy.md's "A C program on x86-64"."""
    section = DEPLOY.read_text().split("## A C program on x86-64", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```c\n(.*?)```", section, re.S).group(1)


def test_documented_recipe_runs_from_another_folder(tmp_path):
    doc = DEPLOY.read_text()
    assert ("cc -O2 -std=c11 -Wall -I app main.c -L app -ldigits_model -Wl,-rpath,'$ORIGIN' "
            "-o app/digits") in doc
    module = _module(tmp_path / "digits.vtamod", 12, 5, 0, "digits_")
    app, elsewhere = tmp_path / "app", tmp_path / "elsewhere"
    app.mkdir()
    elsewhere.mkdir()
    _install(module, app, "digits")
    (tmp_path / "main.c").write_text(_doc_main_c())
    _cc(app, tmp_path / "main.c", ["digits"], app / "digits")
    x = np.random.default_rng(5).standard_normal((1, 12)).astype(np.float32)
    x.tofile(elsewhere / "x.bin")
    got = _run(app / "digits", ["x.bin"], cwd=elsewhere)   # neither the module nor app is cwd
    np.testing.assert_array_equal(got, load_module(module)(x)[0].ravel())


TWO_C = r"""
#include <stdio.h>
#include "a_model.h"
#include "b_model.h"

static unsigned char wa[A_WORKSPACE_BYTES] __attribute__((aligned(A_ALIGN)));
static unsigned char wb[B_WORKSPACE_BYTES] __attribute__((aligned(B_ALIGN)));
static float xa[A_INPUT0_BYTES / 4] __attribute__((aligned(A_ALIGN)));
static float ya[A_OUTPUT0_BYTES / 4] __attribute__((aligned(A_ALIGN)));
static float xb[B_INPUT0_BYTES / 4] __attribute__((aligned(B_ALIGN)));
static float yb[B_OUTPUT0_BYTES / 4] __attribute__((aligned(B_ALIGN)));

int main(void) {
    void *ia[] = {xa}, *oa[] = {ya}, *ib[] = {xb}, *ob[] = {yb};
    size_t i;
    for (i = 0; i < sizeof xa / 4; i++) xa[i] = (float)i - 2.0f;
    for (i = 0; i < sizeof xb / 4; i++) xb[i] = 1.0f - (float)i / 4.0f;
    if (a_run(ia, oa, wa) != 0 || b_run(ib, ob, wb) != 0) return 1;
    for (i = 0; i < sizeof ya / 4; i++) printf("%.9g\n", ya[i]);
    for (i = 0; i < sizeof yb / 4; i++) printf("%.9g\n", yb[i]);
    return 0;
}
"""


def test_two_models_with_two_prefixes_in_one_program(tmp_path):
    """Both models have a kernel k0_dense_relu of other shapes: each library keeps its own
    (local), so each entry calls its own kernel and gives its own model's outputs."""
    (ka, na), (kb, nb) = (6, 3), (20, 7)
    a = _module(tmp_path / "a.vtamod", ka, na, 1, "a_")
    b = _module(tmp_path / "b.vtamod", kb, nb, 2, "b_")
    app = tmp_path / "app"
    app.mkdir()
    _install(a, app, "a")
    _install(b, app, "b")
    (tmp_path / "two.c").write_text(TWO_C)
    _cc(app, tmp_path / "two.c", ["a", "b"], app / "two")
    got = _run(app / "two", [], cwd=tmp_path)
    xa = (np.arange(ka, dtype=np.float32) - 2)[None]
    xb = (1 - np.arange(kb, dtype=np.float32) / 4)[None]
    want = np.concatenate([load_module(a)(xa)[0].ravel(), load_module(b)(xb)[0].ravel()])
    np.testing.assert_array_equal(got, want)


def test_elf_soname_exports_and_program_records(tmp_path):
    module = _module(tmp_path / "m.vtamod", 4, 2, 3, "mnist_")
    lib = os.path.join(module, "model.so")
    assert dynamic(lib)["soname"] == "libmnist_model.so"
    assert exported(lib) == {"mnist_run", "mnist_c0"}      # the kernel is local
    app = tmp_path / "app"
    app.mkdir()
    _install(module, app, "mnist")
    (tmp_path / "p.c").write_text('#include "mnist_model.h"\n'
                                  "int main(void) { return mnist_run(0, 0, 0) != -1; }\n")
    _cc(app, tmp_path / "p.c", ["mnist"], app / "p")
    prog = dynamic(app / "p")
    assert "libmnist_model.so" in prog["needed"] and prog["runpath"] == ["$ORIGIN"]
    subprocess.run([str(app / "p")], cwd=tmp_path, check=True, timeout=60)   # NULL -> -1


def test_default_prefix_keeps_vtamod_names(tmp_path):
    graph, params = _dense(4, 2, 4)
    cm = build_model(graph, params=params, executor="aot")
    assert cm.aot["entry"] == "vtamod_run" and cm.aot["prefix"] == "vtamod_"
    cm.save(str(tmp_path / "d.vtamod"))
    assert dynamic(tmp_path / "d.vtamod" / "model.so")["soname"] == "libvtamod_model.so"
    header = (tmp_path / "d.vtamod" / "model.h").read_text()
    assert "#ifndef VTAMOD_MODEL_H" in header and "vtamod_input_names[]" in header


def test_harness_uses_the_recorded_prefix(tmp_path):
    module = _module(tmp_path / "h.vtamod", 8, 3, 6, "h_")
    (tmp_path / "bin").mkdir()
    exe = build_harness(module, tmp_path / "bin" / "harness")
    x = np.random.default_rng(7).standard_normal((1, 8)).astype(np.float32)
    y, = run_harness(exe, module, [x])
    np.testing.assert_array_equal(y, load_module(module)(x)[0])


@pytest.mark.parametrize("args,says", [
    (["--executor", "aot", "--aot-prefix", "1mnist_"],
     "--aot-prefix must be the start of a C identifier: a letter, then letters, digits or "
     "underscores (e.g. 'mnist_'), not '1mnist_'"),
    (["--executor", "aot", "--aot-prefix", "mn-ist"], "not 'mn-ist'"),
    (["--aot-prefix", "mnist_"],
     "--aot-prefix mnist_ names the symbols of an AOT module, not of --executor graph: add "
     "--executor aot, or drop it"),
])
def test_cli_refuses_a_bad_or_unused_prefix(tmp_path, args, says):
    from click.testing import CliRunner

    from driver.cli.main import cli
    out = tmp_path / "m.vtamod"
    res = CliRunner().invoke(cli, ["compile", "examples/digits/digits_cnn.onnx", "-o", str(out),
                                   *args])
    assert res.exit_code == 2, res.output
    assert says in " ".join(res.output.split()) and "Traceback" not in res.output
    assert not out.exists()
