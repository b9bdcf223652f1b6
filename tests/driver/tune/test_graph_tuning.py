"""The layout stage end to end: a tiny residual conv net (16x16 input) tuned with two
trials per task; the graph tuner's decision lands in the log, the build applies it with
exactly the transforms it implies, and the outputs agree with onnxruntime to 1e-4."""
from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler import build_model
from compiler.autotune.layout_stage import plan_layout_stage
from compiler.autotune.record import LayoutRecord, TuningLog, read_log
from driver.runtime import load_module
from driver.tune.session import tune_model

ort = pytest.importorskip("onnxruntime")


def residual_net(path):
    """x[1,3,16,16] -> c0 3x3 relu -> c1 3x3 relu -> c2 3x3 (+ c0's output) relu -> c3 1x1
    (8 channels) -> global average pool."""
    rng = np.random.default_rng(0)
    inits, nodes = [], []

    def conv(x, name, o, i, k, relu):
        for suffix, shape in (("_w", (o, i, k, k)), ("_b", (o,))):
            inits.append(numpy_helper.from_array(
                (rng.standard_normal(shape) * 0.2).astype(np.float32), name + suffix))
        nodes.append(helper.make_node("Conv", [x, name + "_w", name + "_b"], [name],
                                      pads=[k // 2] * 4, name=name))
        if not relu:
            return name
        nodes.append(helper.make_node("Relu", [name], [name + "_r"]))
        return name + "_r"
    y0 = conv("x", "c0", 16, 3, 3, True)
    y2 = conv(conv(y0, "c1", 16, 16, 3, True), "c2", 16, 16, 3, False)
    nodes += [helper.make_node("Add", [y2, y0], ["add"]), helper.make_node("Relu", ["add"], ["r"])]
    nodes.append(helper.make_node("GlobalAveragePool", [conv("r", "c3", 8, 16, 1, False)], ["y"]))
    g = helper.make_graph(nodes, "residual",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 1, 1])],
                          inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return str(path)


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    d = tmp_path_factory.mktemp("graph_tuning")
    model, log = residual_net(d / "res.onnx"), d / "t.jsonl"
    s = tune_model(model, log, trials=2, threads=1, measure_model=False)
    return model, log, s


def _check_with_onnxruntime(model, cm):
    x = np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype(np.float32)
    m = load_module(cm)
    m.set_input("x", x)
    m.run()
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(m.get_output(0), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_the_layout_stage_measures_every_layout_and_transform_then_decides(tuned):
    model, log, s = tuned
    kinds = read_log(log)
    keys = {r.key.split("(")[0] for r in kinds["trial"]}
    assert keys == {"conv2d_nchw", "conv2d_nchwc", "conv2d_nchw_to_nchwc", "layout_transform"}
    stage = plan_layout_stage(model)
    logged = {r.key for r in kinds["trial"] if not r.error}
    assert {k for ks in stage.site_keys for k in ks} <= logged
    assert {t.key for t in stage.transforms} <= logged
    [rec] = kinds[LayoutRecord.KIND]
    assert rec.graph == stage.sites.key and rec.layouts == s.layout.layouts
    assert rec.layouts[0][0] == 0            # 3 input channels: the stem reads NCHW
    assert set(s.seconds) == {"extract", "search", "layout"}    # no latency: not measured
    assert all(v > 0 for v in s.seconds.values()), s.seconds
    e = rec.estimate
    assert e["exact"], e
    assert e["dp_s"] <= e["per_layer_best_s"] * (1 + 1e-9)
    assert e["dp_s"] <= e["default_s"] * (1 + 1e-9)
    assert e["transforms"] == len(stage.sites.transforms(rec.layouts))


def test_the_build_applies_the_decision_with_the_transforms_it_implies(tuned):
    model, log, s = tuned
    cm = build_model(model, tuning_log=log)
    assert cm.stats["tuning"]["layouts"] == [list(c) for c in s.layout.layouts]
    assert cm.stats["layout_transforms"] == s.layout.estimate["transforms"]
    _check_with_onnxruntime(model, cm)


# (in block, out block) per conv c0..c3; moves: 2 = c0's output NCHW -> 16c once for c1's
# input and c2's add, c3's output 8c -> NCHW for the pool; 5 = NCHW -> 8c (c1), 8c -> 16c
# (c1 -> c2), NCHW -> 16c (c0's output to the add), 16c -> 8c (c2 -> c3), 8c -> NCHW
@pytest.mark.parametrize("layouts,moves", [([(0, 0), (16, 8), (8, 16), (16, 8)], 2),
                                           ([(0, 0), (8, 8), (16, 16), (8, 8)], 5)])
def test_a_blocked_decision_builds_right(tuned, tmp_path, layouts, moves):
    model, log, _ = tuned
    stage = plan_layout_stage(model)
    mine = TuningLog(tmp_path / "mine.jsonl")
    mine.append(LayoutRecord(stage.sites.key, stage.target, layouts))
    cm = build_model(model, tuning_log=mine.path)
    assert cm.stats["layout_transforms"] == len(stage.sites.transforms(layouts)) == moves
    _check_with_onnxruntime(model, cm)


def test_a_decision_for_another_graph_or_the_default_build_changes_nothing(tuned, tmp_path):
    model, log, _ = tuned
    stage = plan_layout_stage(model)
    other = tmp_path / "other.jsonl"
    other.write_text(LayoutRecord("0" * 16, stage.target, [(8, 8)] * 4).to_json() + "\n")
    for cm in (build_model(model), build_model(model, tuning_log=str(other))):
        assert cm.stats["layout_transforms"] == 0 and "layouts" not in cm.stats["tuning"]


def test_the_decision_line_is_foreign_to_a_trial_reader_and_quiet_to_this_one(tuned):
    import warnings

    from compiler.autotune.record import Record, read_records
    _, log, _ = tuned
    line = next(ln for ln in open(log) if '"graph_layout"' in ln)
    # what a reader of trials alone does with it (it warns and skips such a line)
    with pytest.raises(ValueError, match="field 'key' must be a str"):
        Record.from_dict(json.loads(line))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert all(r.key for r in read_records(log))


def test_decide_is_the_brute_force_minimum_over_synthetic_records(tmp_path):
    import itertools

    from compiler.autotune.layout_stage import decide, transform_key
    from compiler.autotune.record import Record
    stage = plan_layout_stage(residual_net(tmp_path / "res.onnx"))
    ls, rng = stage.sites, np.random.default_rng(2)
    costs = {k: float(rng.uniform(1, 5)) for ks in stage.site_keys for k in ks}
    costs.update({t.key: float(rng.uniform(0, 3)) for t in stage.transforms})
    recs = [Record(k, stage.target, {}, [c]) for k, c in costs.items()]

    def objective(choice):
        total = sum(costs[stage.site_keys[i][c]] for i, c in enumerate(choice))
        pairs = [ls.sites[i].candidates[c] for i, c in enumerate(choice)]
        for e in ls.edges:
            have = "NCHW" if e.src < 0 or not pairs[e.src][1] else f"NCHW{pairs[e.src][1]}c"
            want = ls.required(e, pairs)
            total += costs[transform_key(e.tensor.shape, have, want)] if have != want else 0.0
        return total
    every = list(itertools.product(*(range(len(s.candidates)) for s in ls.sites)))
    best = min(every, key=objective)
    rec = decide(stage, recs)
    assert rec.estimate["dp_s"] == pytest.approx(objective(best))
    assert rec.layouts == [ls.sites[i].candidates[c] for i, c in enumerate(best)]
    assert rec.estimate["default_s"] == pytest.approx(objective((0,) * len(ls.sites)))


@pytest.mark.parametrize("layouts, said", [
    ([(0, 0), (8, 8), (8, 8), (0, 0)], "2 of 4 convs blocked (NCHW->NCHW, NCHW8c->NCHW8c x2, "
                                       "NCHW->NCHW), 2 layout transforms"),
    # the stem reads NCHW and writes NCHW8c: blocked, though its input is not
    ([(0, 8), (8, 8), (8, 8), (0, 0)], "3 of 4 convs blocked (NCHW->NCHW8c, NCHW8c->NCHW8c x2, "
                                       "NCHW->NCHW), 1 layout transform")])
def test_vta_compile_reports_the_applied_layouts(tuned, tmp_path, layouts, said):
    from tests.cli_util import run_cli
    model, _, _ = tuned
    stage = plan_layout_stage(model)
    mine = TuningLog(tmp_path / "mine.jsonl")
    mine.append(LayoutRecord(stage.sites.key, stage.target, layouts))
    r = run_cli("compile", model, "--tuning-log", mine.path, "--quiet", "-o", tmp_path / "m.vtamod")
    assert r.exit_code == 0, r.output
    assert f"layouts: the graph tuner's choice, {said}" in r.output
    assert build_model(model, tuning_log=mine.path).stats["layout_transforms"] == \
        int(said.split(", ")[-1].split()[0])          # the graph has the transforms said


def inverted_residual_net(path):
    """x[1,16,8,8] -> 1x1 expand to 32 (clip) -> 3x3 depthwise stride 2 (clip) -> 1x1 project
    to 16: MobileNetV2's block, its depthwise conv a layout site of its own."""
    rng = np.random.default_rng(2)
    inits, nodes = [], []
    for name, shape in (("e", (32, 16, 1, 1)), ("d", (32, 1, 3, 3)), ("p", (16, 32, 1, 1))):
        inits += [numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32),
                                          name + "_w"),
                  numpy_helper.from_array(rng.standard_normal(shape[0]).astype(np.float32),
                                          name + "_b")]
    nodes += [helper.make_node("Conv", ["x", "e_w", "e_b"], ["e"]),
              helper.make_node("Clip", ["e", "lo", "hi"], ["ec"]),
              helper.make_node("Conv", ["ec", "d_w", "d_b"], ["d"], pads=[1] * 4, strides=[2, 2],
                               group=32),
              helper.make_node("Clip", ["d", "lo", "hi"], ["dc"]),
              helper.make_node("Conv", ["dc", "p_w", "p_b"], ["y"])]
    inits += [numpy_helper.from_array(np.float32(0), "lo"), numpy_helper.from_array(np.float32(6), "hi")]
    g = helper.make_graph(nodes, "inverted_residual",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 4, 4])],
                          inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return str(path)


def test_a_blocked_depthwise_decision_needs_no_transform_between_the_convs(tmp_path):
    model = inverted_residual_net(tmp_path / "ir.onnx")
    stage = plan_layout_stage(model)
    assert [s.candidates for s in stage.sites.sites][1] == ((0, 0), (16, 16), (8, 8))
    assert stage.site_keys[1][1].startswith("depthwise_conv2d_nchwc(")
    layouts = [(16, 16)] * 3
    mine = TuningLog(tmp_path / "mine.jsonl")
    mine.append(LayoutRecord(stage.sites.key, stage.target, layouts))
    cm = build_model(model, tuning_log=mine.path)
    assert cm.stats["layout_transforms"] == 2          # x in, y out: none between the convs
    x = np.random.default_rng(1).standard_normal((1, 16, 8, 8)).astype(np.float32)
    m = load_module(cm)
    m.set_input("x", x)
    m.run()
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(m.get_output(0), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
