"""Partitioning robustness: repeated and empty ONNX node names, an unnamed optional
output, a graph output listed twice, nearest Resize + Concat between accelerator convs."""
import numpy as np
import onnx
import pytest
from click.testing import CliRunner

from compiler import build_model
from compiler.quant import QOp, run as run_oracle
from driver.runtime import load_module
from tests.models.builders import build_upsample_concat


@pytest.fixture(scope="module")
def unet(tmp_path_factory):
    """(model path, compiled module path, calibration samples) at 16x16, default preset."""
    d = tmp_path_factory.mktemp("unet")
    m = build_upsample_concat(size=16, seed=0)
    onnx.save(m, d / "unet.onnx")
    calib = np.random.default_rng(1).standard_normal((8, 3, 16, 16)).astype(np.float32)
    cm = build_model(m, target="vta", calib={"input": calib})
    cm.save(d / "unet.vtamod")
    return d / "unet.onnx", d / "unet.vtamod", cm


def test_model_is_valid_onnx_with_repeated_names():
    m = build_upsample_concat()
    onnx.checker.check_model(m, full_check=True)
    names = [n.name for n in m.graph.node]
    assert names.count("conv") == 5 and names.count("relu") == 4 and "" in names
    assert [o.name for o in m.graph.output][0] == [o.name for o in m.graph.output][1]


def test_convs_and_add_on_accelerator_resize_concat_on_cpu(unet):
    _, _, cm = unet
    qg = cm.plan.qgraph
    placed = [(n.op, n.attrs.get("op"), n.target) for n in qg.nodes
              if n.op in (QOp.CONV2D, QOp.ADD, QOp.INT8)]
    assert placed == [(QOp.CONV2D, None, "cpu"),        # the 3-channel stem
                      (QOp.CONV2D, None, "vta"), (QOp.INT8, "MAX_POOL", "cpu"),
                      (QOp.CONV2D, None, "vta"), (QOp.INT8, "RESIZE", "cpu"),
                      (QOp.INT8, "CONCAT", "cpu"), (QOp.CONV2D, None, "vta"),
                      (QOp.ADD, None, "vta"), (QOp.CONV2D, None, "vta")]
    # int8 all the way: no float round trip around the resize and the concat
    assert sum(n.op is QOp.DEQUANTIZE for n in qg.nodes) == 1
    # conv -> add -> conv stays packed
    kinds = [s.kind for s in cm.plan.steps]
    assert kinds[-6:] == ["pack", "vta", "vta", "vta", "unpack", "cpu"]


def test_bit_exact_with_oracle_and_close_to_onnxruntime(unet):
    import onnxruntime as ort
    _, path, cm = unet
    x = np.random.default_rng(2).standard_normal((1, 3, 16, 16)).astype(np.float32)
    m = load_module(path, device="tsim")
    got = m(x)
    want = run_oracle(cm.plan.qgraph, {"input": x})
    # four convs named "conv" and the add each keep their own counters
    layers = m.stats()["layers"]
    assert sorted(layers) == ["add", "conv", "conv#2", "conv#3", "conv#4"]
    assert all(c["runs"] == 1 and c["cycles"] > 0 for c in layers.values())
    assert len(got) == 2
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    ref = ort.InferenceSession(build_upsample_concat(repeat_names=False).SerializeToString(),
                               providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
    f, q = ref.ravel(), got[0].ravel()
    assert f @ q / np.linalg.norm(f) / np.linalg.norm(q) > 0.995
    assert np.abs(q - f).max() < 0.1 * np.abs(f).max()


def test_cli_compile_and_run_on_rtl(tmp_path):
    """``vta compile --target vta`` then ``vta run --device fsim`` and ``--device rtl`` on
    the small 1x4 preset (its Verilator model builds in seconds): same outputs."""
    from driver.cli.main import cli
    onnx.save(build_upsample_concat(size=8, seed=3), tmp_path / "u.onnx")
    np.savez(tmp_path / "calib.npz",
             input=np.random.default_rng(4).standard_normal((4, 3, 8, 8)).astype(np.float32))
    out = tmp_path / "u.vtamod"
    r = CliRunner().invoke(cli, ["compile", str(tmp_path / "u.onnx"), "--target", "vta",
                                 "--config", "1x4_i8w8a32_10_10_10_11_bus32", "--calibrate",
                                 str(tmp_path / "calib.npz"), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "6 on the accelerator" in r.output and "vta  add" in r.output
    outs = {}
    for dev in ("fsim", "rtl"):
        y = tmp_path / f"{dev}.npy"
        r = CliRunner().invoke(cli, ["run", str(out), "--device", dev, "--save-output", str(y)])
        assert r.exit_code == 0, r.output
        outs[dev] = np.load(y)
    assert "total cycles" in r.output
    np.testing.assert_array_equal(outs["fsim"], outs["rtl"])
