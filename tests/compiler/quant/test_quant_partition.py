"""Partitioning: what runs where, the data movement inserted, module save/load."""
import json

import numpy as np

from compiler.frontend.onnx import from_onnx
from compiler.quant import build_plan, build_vta_model, partition, quantize
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
    m = build_vta_model(DIGITS, input_shapes={"image": (2, 1, 8, 8)},
                        calib={"image": x.reshape(-1, 1, 8, 8)})
    m.save(tmp_path / "d.vtamod")
    doc = json.loads((tmp_path / "d.vtamod" / "graph.json").read_text())
    assert doc["format"] == "vtamod-vta-1"
    assert sorted(doc["programs"].values()) == ["programs/n3.vtaprog", "programs/n5.vtaprog"]
    assert doc["inputs"] == [{"name": "image", "shape": [2, 1, 8, 8], "dtype": "float32"}]


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
