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
