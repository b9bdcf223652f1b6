"""Whole models on the accelerator: digits accuracy on the cycle simulator, ResNet-18 bit-exact."""
import json

import numpy as np
import pytest
from click.testing import CliRunner

from compiler import build_model
from compiler.quant import run as run_oracle
from driver.runtime import load_module

DIGITS = "examples/digits/digits_cnn.onnx"
FLOAT_ACCURACY = 0.9833  # examples/digits/README.md


def _heldout():
    d = np.load("examples/digits/heldout.npz")
    return (d["images"].astype(np.float32) / 16).reshape(-1, 1, 8, 8), d["labels"]


def _calibration():
    """Training images (never held out) for int8 calibration."""
    d = np.load("examples/digits/calib.npz")
    return (d["images"].astype(np.float32) / 16).reshape(-1, 1, 8, 8)


@pytest.fixture(scope="module")
def digits_module(tmp_path_factory):
    """(module folder, quantized graph of the oracle)"""
    path = tmp_path_factory.mktemp("vta") / "digits.vtamod"
    cm = build_model(DIGITS, target="vta", input_shapes={"image": (120, 1, 8, 8)},
                     calib={"image": _calibration()})
    cm.save(path)
    return path, cm.plan.qgraph


def test_digits_on_cycle_simulator_within_one_point_of_float(digits_module):
    path, qgraph = digits_module
    x, y = _heldout()
    m = load_module(path, device="tsim")
    n, preds = len(x), []
    for k in range(0, n, 120):
        idx = np.arange(k, k + 120) % n
        xb = x[idx]
        out = m(xb)[0]
        np.testing.assert_array_equal(out, run_oracle(qgraph, {"image": xb})[0])
        preds.append(out.argmax(1)[:min(120, n - k)])
    acc = (np.concatenate(preds) == y).mean()
    assert acc >= FLOAT_ACCURACY - 0.01, acc
    st = m.stats()
    assert st["device"] == "tsim"
    assert st["runs"] == 6 and st["cycles"] > 0 and 0 < st["gemm_utilization"] < 1
    # conv2 and fc ran on the device, every batch (counters keyed by node label)
    assert set(st["layers"]) == {"conv2", "fc"}
    assert all(c["runs"] == 3 and c["cycles"] > 0 for c in st["layers"].values())


def test_digits_in_two_calls_from_python_runs_from_memory(digits_module):
    """What `vta compile --target vta` + `vta run` do, from Python, without a folder."""
    _, qgraph = digits_module
    x, _ = _heldout()
    cm = build_model(DIGITS, target="vta", input_shapes={"image": (120, 1, 8, 8)},
                     calib={"image": _calibration()})
    assert cm.targets[-1] == "vta" and cm.vta["config_name"] == "1x16_i8w8a32_15_15_18_17"
    assert sorted(cm.programs) == ["programs/n3.vtaprog", "programs/n5.vtaprog"]
    out = load_module(cm, device="fsim")(x[:120])[0]
    np.testing.assert_array_equal(out, run_oracle(qgraph, {"image": x[:120]})[0])


def test_digits_on_rtl_bit_exact(tmp_path):
    """The small 1x4 preset (its Verilator model builds in seconds); there the 1-channel
    first conv passes the channel rule too, so all three layers run on the RTL."""
    x, _ = _heldout()
    path = tmp_path / "d4.vtamod"
    cm = build_model(DIGITS, target="vta", config="1x4_i8w8a32_10_10_10_11_bus32",
                     input_shapes={"image": (4, 1, 8, 8)}, calib={"image": x})
    assert sum(n.target == "vta" for n in cm.plan.qgraph.nodes) == 3
    cm.save(path)
    m = load_module(path, device="rtl")
    out = m(x[:4])[0]
    np.testing.assert_array_equal(out, run_oracle(cm.plan.qgraph, {"image": x[:4]})[0])
    st = m.stats()
    assert st["cycles"] > 0 and 0 < st["gemm_utilization"] < 1


def test_resnet18_bit_exact_with_cpu_oracle(tmp_path):
    """Every conv but the 3-channel stem, the dense and all 8 residual adds run on the
    accelerator; from the stem's max pool to the global average pool every value stays
    packed, and every one (packed or not) equals the oracle's."""
    from compiler.quant import QOp
    from compiler.quant.partition import unpack_value
    from tests.models.builders import build_resnet18
    rng = np.random.default_rng(0)
    calib = rng.standard_normal((4, 3, 32, 32)).astype(np.float32)
    cm = build_model(build_resnet18(size=32, seed=0), target="vta", calib={"input": calib},
                     input_shapes={"input": (1, 3, 32, 32)})
    qg, plan = cm.plan.qgraph, cm.plan
    on_vta = [n.op for n in qg.nodes if n.target == "vta"]
    assert len(on_vta) == 28 and on_vta.count(QOp.ADD) == 8  # 19 convs, 8 adds, the dense
    kinds = [s.kind for s in plan.steps]
    assert kinds.count("pack") == 2 and kinds.count("unpack") == 2  # stem -> ... -> mean; fc
    cm.save(tmp_path / "r18.vtamod")
    m = load_module(tmp_path / "r18.vtamod", device="tsim")
    x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
    trace = m.trace(x)
    want = run_oracle(qg, {"input": x}, keep=True)

    def is_constant(s):      # float constants are params of the module, not calls
        n = qg.nodes[s.node]
        return s.kind == "cpu" and n.op is QOp.FLOAT and n.attrs["op"] == "PARAM"
    steps = [s for s in plan.steps if not is_constant(s)]
    assert len(steps) == len(trace)
    got = {f"%{i}": x for i in qg.inputs}
    got.update({f"%{s.node}": cm.params[qg.nodes[s.node].params[0]]
                for s in plan.steps if is_constant(s)})
    got.update({s.output: v for s, (_, v) in zip(steps, trace)})
    checked = 0
    for i, n in enumerate(qg.nodes):          # every tensor, not only the logits
        v = got.get(f"%{i}")
        if v is None and f"%{i}.packed" in got:
            v = unpack_value(got[f"%{i}.packed"], n.shape)
        if v is not None:
            np.testing.assert_array_equal(v, want[i], err_msg=f"node %{i} {n.name}")
            checked += 1
    assert checked == len(qg.nodes)
    names = {n.name: n.op for n in qg.nodes if n.target == "vta"}
    assert {names[k] for k in m.stats()["layers"]} == {QOp.CONV2D, QOp.ADD, QOp.DENSE}
    out = m(x)[0]
    assert out.shape == (1, 1000) and np.isfinite(out).all() and np.ptp(out) > 0


def test_cli_compile_and_run_vta(tmp_path):
    from driver.cli.main import cli
    out = tmp_path / "d.vtamod"
    r = CliRunner().invoke(cli, ["compile", DIGITS, "--target", "vta", "--input-shape",
                                 "image:180x1x8x8", "--calibrate", "examples/digits/calib.npz",
                                 "--calibrate-scale", "0.0625", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "2 on the accelerator" in r.output
    r = CliRunner().invoke(cli, ["run", str(out), "--device", "tsim", "--eval",
                                 "examples/digits/heldout.npz", "--eval-scale", "0.0625"])
    assert r.exit_code == 0, r.output
    acc = float(r.output.split("accuracy: ")[1].split(" %")[0])
    assert acc >= 100 * FLOAT_ACCURACY - 1
    assert "total cycles" in r.output and "GEMM utilization" in r.output
    r = CliRunner().invoke(cli, ["run", str(out), "--device", "fsim"])
    assert r.exit_code == 0 and "output logits: float32[180, 10]" in r.output, r.output
    assert "(the functional simulator has no cycles; use --device tsim)" in r.output
    r = CliRunner().invoke(cli, ["run", str(out), "--device", "fpga"])   # every registered backend
    assert r.exit_code == 1 and "--device fpga needs --port SERIAL" in r.output, r.output
    r = CliRunner().invoke(cli, ["run", str(out), "--device", "fpga", "--port", str(tmp_path / "nope")])
    assert r.exit_code == 1 and "cannot open serial port" in r.output, r.output
    r = CliRunner().invoke(cli, ["run", str(out), "--port", "/dev/ttyUSB0"])
    assert r.exit_code == 1 and "applies to --device fpga only" in r.output, r.output
    r = CliRunner().invoke(cli, ["run", str(out)])           # the default device: tsim
    assert r.exit_code == 0 and "device tsim:" in r.output, r.output


def test_cli_device_on_cpu_module_is_an_error(tmp_path):
    from driver.cli.main import cli
    build_model(DIGITS).save(str(tmp_path / "m"))
    r = CliRunner().invoke(cli, ["run", str(tmp_path / "m"), "--device", "tsim"])
    assert r.exit_code != 0 and "is a CPU module" in r.output


def test_cli_per_channel_compile_and_run(tmp_path):
    """``--per-channel``: per-output-channel weight scales; same accuracy bar, bit-exact."""
    from driver.cli.main import cli
    out = tmp_path / "pc.vtamod"
    r = CliRunner().invoke(cli, ["compile", DIGITS, "--target", "vta", "--per-channel",
                                 "--input-shape", "image:359x1x8x8", "--calibrate",
                                 "examples/digits/calib.npz", "--calibrate-scale", "0.0625",
                                 "--cpu-target", "llvm -mcpu=x86-64-v2", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "per channel" in r.output
    cpu = json.loads((out / "manifest.json").read_text())["cpu"]    # portable CPU steps
    assert cpu["cpu"] == "x86-64-v2" and "+avx2" not in cpu["features"]
    m = load_module(out, device="fsim")
    x, y = _heldout()
    got = m(x)[0]
    qgraph = build_model(DIGITS, target="vta", per_channel=True,
                         input_shapes={"image": (359, 1, 8, 8)},
                         calib={"image": _calibration()}).plan.qgraph   # the same calibration
    np.testing.assert_array_equal(got, run_oracle(qgraph, {"image": x})[0])
    assert (got.argmax(1) == y).mean() >= FLOAT_ACCURACY - 0.01
    r = CliRunner().invoke(cli, ["compile", DIGITS, "--per-channel", "-o", str(tmp_path / "c")])
    assert r.exit_code != 0 and "--per-channel applies to --target vta only" in r.output
