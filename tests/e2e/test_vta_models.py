"""Whole models on the accelerator: digits accuracy on the cycle simulator, ResNet-18 bit-exact."""
import numpy as np
import pytest
from click.testing import CliRunner

from compiler.quant import build_vta_model, run as run_oracle
from driver.vta_runtime import load_vta_module

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
    path = tmp_path_factory.mktemp("vta") / "digits.vtamod"
    build_vta_model(DIGITS, input_shapes={"image": (120, 1, 8, 8)},
                    calib={"image": _calibration()}).save(path)
    return path


def test_digits_on_cycle_simulator_within_one_point_of_float(digits_module):
    x, y = _heldout()
    m = load_vta_module(digits_module, "tsim")
    n, preds = len(x), []
    for k in range(0, n, 120):
        idx = np.arange(k, k + 120) % n
        xb = x[idx]
        out = m.run({"image": xb})[0]
        np.testing.assert_array_equal(out, run_oracle(m.qgraph, {"image": xb})[0])
        preds.append(out.argmax(1)[:min(120, n - k)])
    acc = (np.concatenate(preds) == y).mean()
    assert acc >= FLOAT_ACCURACY - 0.01, acc
    st = m.stats()
    assert st["runs"] == 6 and st["cycles"] > 0 and 0 < st["gemm_utilization"] < 1
    assert set(st["layers"]) == {3, 5}  # conv2 and fc ran on the device, every batch


def test_digits_on_rtl_bit_exact(tmp_path):
    """The small 1x4 preset (its Verilator model builds in seconds); there the 1-channel
    first conv passes the channel rule too, so all three layers run on the RTL."""
    x, _ = _heldout()
    path = tmp_path / "d4.vtamod"
    cm = build_vta_model(DIGITS, config="1x4_i8w8a32_10_10_10_11_bus32",
                         input_shapes={"image": (4, 1, 8, 8)}, calib={"image": x})
    assert sum(n.target == "vta" for n in cm.qgraph.nodes) == 3
    cm.save(path)
    m = load_vta_module(path, "rtl")
    out = m.run({"image": x[:4]})[0]
    np.testing.assert_array_equal(out, run_oracle(m.qgraph, {"image": x[:4]})[0])
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
    cm = build_vta_model(build_resnet18(size=32, seed=0), calib={"input": calib},
                         input_shapes={"input": (1, 3, 32, 32)})
    on_vta = [n.op for n in cm.qgraph.nodes if n.target == "vta"]
    assert len(on_vta) == 28 and on_vta.count(QOp.ADD) == 8  # 19 convs, 8 adds, the dense
    kinds = [s.kind for s in cm.plan.steps]
    assert kinds.count("pack") == 2 and kinds.count("unpack") == 2  # stem -> ... -> mean; fc
    cm.save(tmp_path / "r18.vtamod")
    m = load_vta_module(tmp_path / "r18.vtamod", "tsim")
    x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
    got = m.run({"input": x}, keep=True)
    want = run_oracle(m.qgraph, {"input": x}, keep=True)
    checked = 0
    for i, n in enumerate(m.qgraph.nodes):          # every tensor, not only the logits
        v = got.get(f"%{i}")
        if v is None and f"%{i}.packed" in got:
            v = unpack_value(got[f"%{i}.packed"], n.shape)
        if v is not None:
            np.testing.assert_array_equal(v, want[i], err_msg=f"node %{i} {n.name}")
            checked += 1
    assert checked == len(m.qgraph.nodes)
    assert {m.qgraph.nodes[k].op for k in m.stats()["layers"]} == {QOp.CONV2D, QOp.ADD,
                                                                     QOp.DENSE}
    out = got[f"%{m.qgraph.outputs[0]}"]
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


def test_cli_device_on_cpu_module_is_an_error(tmp_path):
    from driver.cli.main import cli
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "graph.json").write_text('{"format": "vtamod-1"}')
    r = CliRunner().invoke(cli, ["run", str(tmp_path / "m"), "--device", "tsim"])
    assert r.exit_code != 0 and "is a CPU module" in r.output


def test_cli_per_channel_compile_and_run(tmp_path):
    """``--per-channel``: per-output-channel weight scales; same accuracy bar, bit-exact."""
    from driver.cli.main import cli
    out = tmp_path / "pc.vtamod"
    r = CliRunner().invoke(cli, ["compile", DIGITS, "--target", "vta", "--per-channel",
                                 "--input-shape", "image:359x1x8x8", "--calibrate",
                                 "examples/digits/calib.npz", "--calibrate-scale", "0.0625",
                                 "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "per channel" in r.output
    m = load_vta_module(out, "fsim")
    x, y = _heldout()
    got = m.run({"image": x})[0]
    np.testing.assert_array_equal(got, run_oracle(m.qgraph, {"image": x})[0])
    assert (got.argmax(1) == y).mean() >= FLOAT_ACCURACY - 0.01
    r = CliRunner().invoke(cli, ["compile", DIGITS, "--per-channel", "-o", str(tmp_path / "c")])
    assert r.exit_code != 0 and "--per-channel apply to --target vta only" in r.output
