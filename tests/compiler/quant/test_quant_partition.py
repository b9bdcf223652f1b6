"""Partitioning: what runs where, the data movement inserted, module save/load."""
import json

import numpy as np
import pytest

from compiler.frontend.onnx import from_onnx
from compiler import build_model
from compiler.quant import build_plan, partition, quantize
from vta_hw.config import load_config

DIGITS = "examples/digits/digits_cnn.onnx"


def _digits_qgraph(batch=4):
    x = (np.load("examples/digits/heldout.npz")["images"][:32].astype(np.float32) / 16)
    g, p = from_onnx(DIGITS, input_shapes={"image": (batch, 1, 8, 8)})
    return quantize(g, p, {"image": x.reshape(-1, 1, 8, 8)})


def test_first_conv_with_one_channel_stays_on_cpu():
    qg = partition(_digits_qgraph(), load_config())
    targets = [(n.name, n.target) for n in qg.nodes if n.op.value in ("conv2d", "dense")]
    assert targets == [("conv1", "cpu"), ("conv2", "vta"), ("fc", "vta")]
    everything = partition(_digits_qgraph(), load_config(), min_channels=1)
    assert sum(n.target == "vta" for n in everything.nodes) == 3


def test_plan_inserts_pack_and_unpack():
    plan = build_plan(_digits_qgraph(), load_config())
    kinds = [s.kind for s in plan.steps]
    assert kinds == ["cpu", "cpu", "pack", "vta", "unpack", "cpu", "pack", "vta", "unpack", "cpu"]
    assert set(plan.programs) == {3, 5}
    prog = plan.programs[3]
    assert prog.buffer("kernel").data is not None and prog.buffer("bias").data is not None


def test_consecutive_accelerator_nodes_pass_packed_values():
    plan = build_plan(_digits_qgraph(), load_config(), min_channels=1)
    kinds = [s.kind for s in plan.steps]
    # conv1 -> conv2 on the accelerator: no unpack/pack between them
    assert kinds[:4] == ["cpu", "pack", "vta", "vta"]


def test_module_folder_round_trip(tmp_path):
    x = np.load("examples/digits/heldout.npz")["images"][:16].astype(np.float32) / 16
    m = build_model(DIGITS, target="vta", input_shapes={"image": (2, 1, 8, 8)},
                    calib={"image": x.reshape(-1, 1, 8, 8)})
    m.save(tmp_path / "d.vtamod")
    doc = json.loads((tmp_path / "d.vtamod" / "manifest.json").read_text())
    assert (doc["format"], doc["version"], doc["targets"][-1]) == ("vtamod", 3, "vta")
    assert doc["vta"]["config"] == load_config().to_dict()
    assert sorted(f for f in doc["files"] if f.startswith("programs/")) == [
        "programs/n3.vtaprog", "programs/n5.vtaprog"]
    assert doc["inputs"] == [{"name": "image", "shape": [2, 1, 8, 8], "dtype": "float32"}]
    graph = json.loads((tmp_path / "d.vtamod" / "graph.json").read_text())
    assert sorted(c["program"] for c in graph["calls"] if c["kind"] == "vta") == [
        "programs/n3.vtaprog", "programs/n5.vtaprog"]


def test_dense_rows_pack_as_one_image_row_and_back():
    from compiler.quant.partition import compile_node, pack_value, unpack_value
    from compiler.quant.qgraph import QGraph, QNode, QOp, eval_node
    from sim import functional
    rng = np.random.default_rng(3)
    for preset in ("1x16_i8w8a32_15_15_18_17", "2x16_i8w8a32_15_15_18_18"):
        cfg = load_config(preset)
        x = rng.integers(-128, 128, (5, 40), dtype=np.int8)
        params = {"w": rng.integers(-128, 128, (20, 40), dtype=np.int8),
                  "b": rng.integers(-999, 999, 20).astype(np.int32)}
        qg = QGraph([QNode(QOp.QUANTIZE, (), (5, 40), "int8", 0),
                     QNode(QOp.DENSE, (0,), (5, 20), "int8", 0, {"shift": 6, "relu": True},
                           ("w", "b"))], [], [1], ["y"], params)
        k = compile_node(qg, 1, cfg)
        data = pack_value(cfg, x, k.program.buffer("data").shape)
        np.testing.assert_array_equal(unpack_value(data, (5, 40)), x)
        out = functional.run(k.program, k.program.dram_image({"data": data})).dram
        got = unpack_value(k.program.read(out, "out"), (5, 20))
        np.testing.assert_array_equal(got, eval_node(qg.nodes[1], [x], params))


def _residual_graph(rng):
    """conv -> relu -> add(., x) -> relu -> conv, 24 channels (not a block multiple)."""
    from compiler.graph import Graph, Op, input_node, make, param_node
    x = input_node("x", (1, 24, 6, 6))
    w1 = rng.standard_normal((24, 24, 3, 3)).astype(np.float32) * 0.1
    w2 = rng.standard_normal((8, 24, 1, 1)).astype(np.float32) * 0.2
    c1 = make(Op.RELU, make(Op.CONV2D, x, param_node("w1", w1), strides=(1, 1),
                            pads=(1, 1, 1, 1)))
    r = make(Op.RELU, make(Op.ADD, c1, x))
    y = make(Op.CONV2D, r, param_node("w2", w2), strides=(1, 1), pads=(0, 0, 0, 0))
    return Graph((x,), (y,), ("y",)), {"w1": w1, "w2": w2}


@pytest.mark.parametrize("per_channel", [False, True])
def test_residual_add_on_accelerator_stays_packed(tmp_path, per_channel):
    from compiler.quant import QOp, run
    from driver.runtime import load_module
    rng = np.random.default_rng(4)
    g, params = _residual_graph(rng)
    cm = build_model(g, params=params, target="vta",
                     calib={"x": rng.standard_normal((4, 24, 6, 6))}, per_channel=per_channel)
    qg = cm.plan.qgraph
    conv = next(n for n in qg.nodes if n.op is QOp.CONV2D)
    assert isinstance(conv.attrs["shift"], tuple) == per_channel
    assert ("shift" in {b.name for b in cm.plan.programs[qg.nodes.index(conv)].buffers}
            ) == per_channel
    assert [n.op for n in qg.nodes if n.target == "vta"] == [QOp.CONV2D, QOp.ADD, QOp.CONV2D]
    steps = [(s.kind, s.node, len(s.inputs)) for s in cm.plan.steps]
    add = next(i for i, n in enumerate(qg.nodes) if n.op is QOp.ADD)
    # x packs once and feeds both the conv and the add; conv -> add -> conv stay packed
    assert [k for k, _, _ in steps] == ["cpu", "pack", "vta", "vta", "vta", "unpack", "cpu"]
    assert ("vta", add, 2) in steps
    cm.save(tmp_path / "res.vtamod")
    m = load_module(tmp_path / "res.vtamod", device="fsim")
    x = rng.standard_normal((1, 24, 6, 6)).astype(np.float32)
    np.testing.assert_array_equal(m(x)[0], run(qg, {"x": x})[0])


@pytest.mark.parametrize("fmt", ["vtamod-vta-1", "vtamod-vta-2"])
def test_earlier_accelerator_module_folders_say_recompile(tmp_path, fmt):
    """Folders of the accelerator's earlier formats (graph.json with a quantized graph and
    plan steps, no manifest) are one line that says to recompile."""
    from driver.runtime import RuntimeModuleError, load_module
    old = tmp_path / "d.vtamod"
    (old / "programs").mkdir(parents=True)
    (old / "graph.json").write_text(json.dumps({"format": fmt, "steps": [], "programs": {}}))
    np.savez(old / "params.npz")
    with pytest.raises(RuntimeModuleError, match=rf"written by an earlier version \(format "
                                                 rf"'{fmt}'\); recompile it with `vta compile`"):
        load_module(old, device="fsim")


def test_dense_then_2d_add_stays_packed(tmp_path):
    """A 2-D residual add after a dense: (N, C) rows packed as one image row, as the dense's."""
    from compiler.quant import QGraph, QNode, QOp, run
    from compiler.quant.lower_plan import lower_plan
    from driver.runtime import load_module
    rng = np.random.default_rng(8)
    params = {"w": rng.integers(-128, 128, (40, 40), dtype=np.int8),
              "b": rng.integers(-999, 999, 40).astype(np.int32)}
    nodes = [QNode(QOp.INPUT, (), (5, 40), "float32", name="x"),
             QNode(QOp.QUANTIZE, (0,), (5, 40), "int8", 4),
             QNode(QOp.DENSE, (1,), (5, 40), "int8", 4, {"shift": 9, "relu": True}, ("w", "b")),
             QNode(QOp.ADD, (2, 1), (5, 40), "int8", 3, {"la": 0, "lb": 0, "shift": 1,
                                                         "relu": False}),
             QNode(QOp.DEQUANTIZE, (3,), (5, 40), "float32", attrs={"src_exp": 3})]
    qg = QGraph(nodes, [0], [4], ["y"], params)
    plan = build_plan(qg, load_config())
    assert [(s.kind, s.node) for s in plan.steps] == [
        ("cpu", 1), ("pack", 2), ("vta", 2), ("vta", 3), ("unpack", 3), ("cpu", 4)]
    lower_plan(plan).save(tmp_path / "m.vtamod")
    x = rng.standard_normal((5, 40)).astype(np.float32) * 4
    got = load_module(tmp_path / "m.vtamod", device="fsim")(x)[0]
    np.testing.assert_array_equal(got, run(qg, {"x": x})[0])
