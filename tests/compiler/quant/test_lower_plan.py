"""``lower_plan``: a Plan -> the execution plan (slots, kernel and vta calls, params) and one
kernels.so; run end to end (``driver.runtime.load_module``) bit-equal to the oracle."""
import numpy as np
import pytest

from compiler.frontend.onnx import from_onnx
from compiler.quant import build_plan, quantize, run as run_oracle
from compiler.quant.lower_plan import lower_plan, plan_slots, value_types
from driver.runtime import load_module
from vta_hw.config import load_config

DIGITS = "examples/digits/digits_cnn.onnx"


def _digits_plan(batch=4, per_channel=False, **kw):
    x = np.load("examples/digits/heldout.npz")["images"][:64].astype(np.float32) / 16
    g, p = from_onnx(DIGITS, input_shapes={"image": (batch, 1, 8, 8)})
    qg = quantize(g, p, {"image": x.reshape(-1, 1, 8, 8)}, per_channel=per_channel)
    return build_plan(qg, load_config(), **kw)


def test_digits_execution_plan():
    plan = _digits_plan()
    cm = lower_plan(plan)
    gj = cm.graph_json
    kinds = [(c["kind"], c.get("kernel", c.get("program"))) for c in gj["calls"]]
    # steps: quantize, conv1 (CPU), pack, conv2 (vta), unpack, reshape, pack, fc (vta),
    # unpack, dequantize: one call each
    assert [k for k, _ in kinds] == ["kernel"] * 3 + ["vta"] + ["kernel"] * 3 + ["vta"] + ["kernel"] * 2
    assert [p for k, p in kinds if k == "vta"] == ["programs/n3.vtaprog", "programs/n5.vtaprog"]
    assert sorted(cm.programs) == ["programs/n3.vtaprog", "programs/n5.vtaprog"]
    vta = gj["calls"][3]
    assert [i["buffer"] for i in vta["inputs"]] == ["data"]
    assert vta["inputs"][0]["ref"] == gj["calls"][2]["args"][-1]      # the pack's output
    assert vta["outputs"][0]["buffer"] == "out"
    # the calibrated range the input's QUANTIZE represents (input_check counts values beyond)
    (inp,) = gj["inputs"]
    assert {k: inp[k] for k in ("name", "shape", "dtype")} == {
        "name": "image", "shape": [4, 1, 8, 8], "dtype": "float32"}
    lo, hi = inp["range"]
    assert lo < 0 < hi and hi == -lo * 127 / 128
    assert [(o["shape"], o["dtype"]) for o in gj["outputs"]] == [([4, 10], "float32")]
    conv1 = gj["calls"][1]
    assert [cm.params[r["name"]].dtype for r in conv1["args"] if r["kind"] == "param"] == \
        [np.int8, np.int32]
    assert cm.targets[-1] == "vta" and cm.vta["config_name"] == plan.config.name
    assert cm.files["kernels.so"][:4] == b"\x7fELF"


def test_slots_are_reused_and_never_shared_within_a_step():
    plan = _digits_plan()
    types = value_types(plan)
    slot_of, sizes = plan_slots(plan, types)
    assert len(sizes) < len(slot_of)                  # some slot holds two values over time
    for s in plan.steps:
        assert slot_of[s.output] not in {slot_of.get(v) for v in s.inputs}
    for v, k in slot_of.items():
        shape, dtype = types[v]
        assert sizes[k] >= int(np.prod(shape)) * np.dtype(dtype).itemsize


@pytest.mark.parametrize("per_channel", [False, True])
def test_digits_bit_equal_to_oracle_on_fsim(per_channel):
    plan = _digits_plan(batch=8, per_channel=per_channel)
    cm = lower_plan(plan)
    x = np.load("examples/digits/heldout.npz")["images"][64:72].astype(np.float32) / 16
    x = x.reshape(8, 1, 8, 8)
    got = load_module(cm, device="fsim")(x)[0]
    np.testing.assert_array_equal(got, run_oracle(plan.qgraph, {"image": x})[0])


def test_every_node_on_the_cpu_bit_equal_to_oracle():
    # nothing offloaded (a huge channel rule): conv2 and fc run as CPU kernels too
    plan = _digits_plan(min_channels=1 << 20)
    assert not plan.programs
    cm = lower_plan(plan)
    x = np.random.default_rng(1).standard_normal((4, 1, 8, 8)).astype(np.float32)
    np.testing.assert_array_equal(load_module(cm, device="fsim")(x)[0], run_oracle(plan.qgraph, {"image": x})[0])


def test_cpu_target_is_recorded_and_runs():
    # an older x86-64 level: the kernels (and the manifest's features) leave AVX-512 out
    plan = _digits_plan()
    cm = lower_plan(plan, cpu_target="llvm -mcpu=x86-64-v2")
    assert cm.targets[0].startswith("llvm") and "x86-64-v2" in cm.targets[0]
    assert "+avx512f" not in cm.cpu["features"]
    x = np.random.default_rng(4).standard_normal((4, 1, 8, 8)).astype(np.float32)
    np.testing.assert_array_equal(load_module(cm, device="fsim")(x)[0],
                                  run_oracle(plan.qgraph, {"image": x})[0])


def test_progress_sees_the_steps_and_the_kernels():
    seen = []

    def progress(items, total, desc):
        seen.append((desc, total))
        return items
    plan = _digits_plan()
    cm = lower_plan(plan, progress=progress)
    assert seen == [("CPU steps", len(plan.steps)), ("lowering", cm.stats["kernels"])]
