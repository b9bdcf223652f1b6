"""Web modules (a wasm32 AOT model in one .wasm file) in Node and in wasmtime, against x86-64.

Closeness: max |wasm - x86| <= 1e-5 x max |x86| (``assert_close``): the two sum in
different orders (4 float lanes without FMA against AVX-512 with FMA), so a deep
network's logits differ by a few ulps of their largest value.
"""
from __future__ import annotations

import numpy as np
import pytest

from driver.runtime import RuntimeModuleError, load_module
from tests.models.oracle import assert_close
from tests.driver.web_util import DIGITS, HELDOUT, RUNTIME, needs_node, needs_wasm_ld, node_module

pytestmark = needs_wasm_ld

# loads the module at argv[1], runs it on the float32 file argv[2] (the first input), prints
# the first output and what the runtime says to a wrong-sized input and a truncated file
RUN = f"""
import {{ readFileSync }} from "node:fs";
import {{ loadModel, VtaModelError }} from "{RUNTIME}";
const [path, xpath] = process.argv.slice(1);
const bytes = readFileSync(path);
const m = await loadModel(bytes);
const x = new Float32Array(new Uint8Array(readFileSync(xpath)).buffer);
const name = m.inputs[0].name;
const y = m.run({{ [name]: x }})[m.outputs[0].name];
const errors = {{}};
const tries = {{
  short: () => m.run({{ [name]: x.subarray(1) }}),
  wrongType: () => m.run({{ [name]: new Float64Array(x.length) }}),
  unknown: () => m.run({{ [name]: x, nope: x }}),
  missing: () => m.run({{}}),
}};
for (const [k, f] of Object.entries(tries)) {{
  try {{ f(); errors[k] = "no error"; }} catch (e) {{ errors[k] = (e instanceof VtaModelError) + " " + e.message; }}
}}
for (const cut of [bytes.length >> 1, bytes.length - 3]) {{
  try {{ await loadModel(bytes.subarray(0, cut)); errors["cut" + cut] = "no error"; }}
  catch (e) {{ errors["truncated"] = (errors["truncated"] || "") + (e instanceof VtaModelError) + " " + e.message + "|"; }}
}}
console.log(JSON.stringify({{ y: Array.from(y), inputs: m.inputs, errors }}));
"""


def _build(model, tmp_path, name, x):
    from compiler import build_model
    from compiler.graph_lower.web import build_web
    wasm = tmp_path / f"{name}.wasm"
    wasm.write_bytes(build_web(model))
    ref = load_module(build_model(model))
    ref.set_input(0, x)
    ref.run()
    xpath = tmp_path / f"{name}_x.bin"
    x.astype("<f4").tofile(xpath)
    return wasm, xpath, ref.get_output(0)


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    x = (np.load(HELDOUT)["images"][:1].reshape(1, 1, 8, 8) / 16).astype(np.float32)
    return _build(DIGITS, tmp_path_factory.mktemp("web"), "digits", x)


@needs_node
def test_digits_in_node_equals_x86(digits):
    wasm, xpath, ref = digits
    got = node_module(RUN, wasm, xpath)
    assert_close(np.array(got["y"], np.float32).reshape(ref.shape), ref, rel=1e-5)
    assert got["inputs"] == [{"name": "image", "shape": [1, 1, 8, 8], "dtype": "float32"}]
    err = got["errors"]
    assert err["short"] == ('true input "image" must be a Float32Array of 64 elements '
                            '(float32[1,1,8,8]), not a Float32Array of 63 elements')
    assert err["wrongType"].startswith('true input "image" must be a Float32Array') and \
        "not a Float64Array" in err["wrongType"]
    assert err["unknown"] == 'true unknown input "nope"; the model\'s inputs are ["image"]'
    assert err["missing"].startswith('true input "image" is missing; pass a Float32Array of 64')
    halves = err["truncated"].split("|")[:2]
    assert all(h.startswith("true the .wasm file (") for h in halves), halves
    assert "truncated" in halves[0] and "truncated" in halves[1]


def test_digits_in_wasmtime_equals_x86(digits):
    from driver.runtime.wasm import load_wasm
    wasm, xpath, ref = digits
    m = load_wasm(str(wasm))
    x = np.fromfile(xpath, "<f4").reshape(1, 1, 8, 8)
    assert_close(m.run(image=x)["logits"], ref, rel=1e-5)
    assert m.inputs == [("image", (1, 1, 8, 8), "float32")]
    assert m.workspace_bytes > 0 and m.constant_bytes > 0
    with pytest.raises(RuntimeModuleError, match=r"input 'image' must have shape \[1, 1, 8, 8\], "
                                                 r"not \[1, 64\]"):
        m.run(image=x.reshape(1, 64))
    with pytest.raises(RuntimeModuleError, match=r"unknown input\(s\) \['label'\]"):
        m.run(image=x, label=x)
    data = wasm.read_bytes()
    for cut in (len(data) // 2, len(data) - 3):
        with pytest.raises(RuntimeModuleError, match=r"is truncated .*: build or copy it again"):
            load_wasm(data[:cut])


def test_web_module_needs_a_wasm32_aot_model():
    from compiler import build_model
    from compiler.graph_lower.web import web_module
    with pytest.raises(ValueError, match=r"a web module is built from a wasm32 AOT model.*"
                                         r"target='wasm32', executor='aot'"):
        web_module(build_model(DIGITS, target="wasm32"))


@pytest.mark.slow
@needs_node
def test_resnet18_in_node_and_wasmtime_equal_x86(tmp_path):
    """ResNet-18 at 32x32 (every layer of the 224 one; 45 MB of constants in the module)."""
    from driver.runtime.wasm import load_wasm
    from tests.models.builders import build_resnet18
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    wasm, xpath, ref = _build(build_resnet18(size=32), tmp_path, "resnet18", x)
    got = np.array(node_module(RUN, wasm, xpath)["y"], np.float32).reshape(ref.shape)
    assert_close(got, ref, rel=1e-5, what="node")
    out = load_wasm(str(wasm)).run(input=x)
    assert_close(next(iter(out.values())), ref, rel=1e-5, what="wasmtime")


def _libm_model():
    """erf, tanh and softmax's exp: kernels that call libm, which a web module imports."""
    from onnx import TensorProto, helper
    nodes = [helper.make_node("Erf", ["x"], ["e"]), helper.make_node("Tanh", ["x"], ["t"]),
             helper.make_node("Softmax", ["x"], ["p"], axis=1),
             helper.make_node("Add", ["e", "t"], ["s"]), helper.make_node("Add", ["s", "p"], ["y"])]
    g = helper.make_graph(nodes, "libm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


@needs_node
def test_libm_imports_come_from_the_runtimes(tmp_path):
    wasmtime = pytest.importorskip("wasmtime", reason="PyPI package 'wasmtime' is not installed")
    from driver.runtime.wasm import load_wasm
    x = np.linspace(-3, 3, 64, dtype=np.float32).reshape(1, 64)
    wasm, xpath, ref = _build(_libm_model(), tmp_path, "libm", x)
    imports = {i.name for i in wasmtime.Module(wasmtime.Engine(), wasm.read_bytes()).imports}
    assert imports == {"erff", "tanhf", "expf"}
    assert_close(np.array(node_module(RUN, wasm, xpath)["y"], np.float32).reshape(1, 64), ref,
                 rel=1e-5, what="node")
    assert_close(load_wasm(str(wasm)).run(x=x)["y"], ref, rel=1e-5, what="wasmtime")


def test_cli_compile_writes_the_wasm_file(digits, tmp_path):
    from driver.runtime.wasm import load_wasm
    from tests.cli_util import run_cli
    _, xpath, ref = digits
    out = tmp_path / "digits.wasm"
    res = run_cli("compile", DIGITS, "--target", "wasm32", "--executor", "aot", "-o",
                  tmp_path / "d.vtamod", "--wasm", out, "--quiet")
    assert res.exit_code == 0, res.output
    assert f"wrote {out}: the model as one WebAssembly file" in res.output
    x = np.fromfile(xpath, "<f4").reshape(1, 1, 8, 8)
    assert_close(load_wasm(str(out)).run(image=x)["logits"], ref, rel=1e-5)
    res = run_cli("compile", DIGITS, "-o", tmp_path / "e.vtamod", "--wasm", out)
    assert res.exit_code == 2
    assert "--wasm needs --target wasm32 --executor aot, not --target 'llvm' --executor graph" \
        in res.output


@needs_node
def test_node_command_line_runs_and_refuses_a_short_input(digits, tmp_path):
    import subprocess

    from tests.driver.web_util import WEB
    wasm, xpath, ref = digits
    cmd = ["node", f"{WEB}/vta_node.mjs", str(wasm)]
    out = tmp_path / "y.bin"
    proc = subprocess.run(cmd + [str(xpath), str(out), "--repeat", "2"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert '"median_ms"' in proc.stdout
    assert_close(np.fromfile(out, "<f4").reshape(ref.shape), ref, rel=1e-5)
    short = tmp_path / "short.bin"
    short.write_bytes(xpath.read_bytes()[:100])
    proc = subprocess.run(cmd + [str(short), str(out)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ('input "image" must be a Float32Array of 64 elements '
                                   '(float32[1,1,8,8]), not a Float32Array of 25 elements')


@needs_node
def test_node_command_line_names_a_missing_file_in_one_line(tmp_path):
    import subprocess

    from tests.driver.web_util import WEB
    missing = tmp_path / "missing.wasm"
    proc = subprocess.run(["node", f"{WEB}/vta_node.mjs", str(missing), str(tmp_path / "x.bin"),
                           str(tmp_path / "y.bin")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"{missing}: no such file"
