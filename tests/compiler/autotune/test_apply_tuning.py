"""Builds apply tuning logs: per workload the best record whose target matches exactly, the
default elsewhere; the build report counts the covered workloads; logs in the shipped folder
apply without being asked for."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import build_model
from compiler.autotune import apply
from compiler.autotune.record import Record, TuningLog
from compiler.autotune.task import llvm_tasks
from compiler.graph import Graph, Op, input_node, make, optimize, param_node
from driver.runtime import load_module


def _model():
    rng = np.random.default_rng(1)
    params = {n: rng.standard_normal(s).astype(np.float32)
              for n, s in (("w0", (16, 8, 3, 3)), ("w1", (8, 16, 1, 1)))}
    x = input_node("x", (1, 8, 9, 9))
    y = make(Op.RELU, make(Op.CONV2D, x, param_node("w0", params["w0"]), pads=(1, 1, 1, 1)))
    y = make(Op.CONV2D, y, param_node("w1", params["w1"]))
    return Graph((x,), (y,), ("y",)), params


def _conv3x3_task():
    g, p = _model()
    (t,) = [t for t in llvm_tasks(optimize(g, p).graph) if "16x8x3x3" in t.key]
    return t


def _run(cm):
    m = load_module(cm)
    m.set_input("x", np.random.default_rng(2).standard_normal((1, 8, 9, 9)).astype(np.float32))
    m.run()
    return m.get_output(0)


def _packs(cm):
    return sorted(k for k in cm.params if "#conv:" in k)


@pytest.fixture
def no_shipped(monkeypatch, tmp_path):
    monkeypatch.setattr(apply, "SHIPPED_DIR", tmp_path / "shipped")
    return tmp_path / "shipped"


def test_a_matching_record_is_applied_and_counted(tmp_path, no_shipped):
    t = _conv3x3_task()
    log = TuningLog(tmp_path / "t.jsonl")
    log.append(Record(t.key, t.target, {"conv_out_block": 4, "ow_tile": 7}, [1.0]))
    log.append(Record(t.key, t.target, {"conv_out_block": 2, "ow_tile": 4}, [2.0]))  # worse
    g, p = _model()
    default = build_model(g, params=p)
    tuned = build_model(g, params=p, tuning_log=str(tmp_path / "t.jsonl"))
    assert _packs(default) == ["w0#conv:16", "w1#conv:8"]
    assert _packs(tuned) == ["w0#conv:4", "w1#conv:8"]          # the best record, w0 only
    assert tuned.stats["tuning"]["workloads"] == 2
    assert tuned.stats["tuning"]["covered"] == 1
    np.testing.assert_allclose(_run(tuned), _run(default), rtol=1e-4, atol=1e-4)


def test_a_record_for_another_cpu_or_feature_set_is_not_applied(tmp_path, no_shipped):
    t = _conv3x3_task()
    log = TuningLog(tmp_path / "t.jsonl")
    other = dict(t.target, features=t.target["features"] + ["+avx512fp16"])
    log.append(Record(t.key, other, {"conv_out_block": 4, "ow_tile": 7}, [1.0]))
    log.append(Record(t.key, dict(t.target, cpu="other"), {"conv_out_block": 2, "ow_tile": 7},
                      [1.0]))
    g, p = _model()
    cm = build_model(g, params=p, tuning_log=str(tmp_path / "t.jsonl"))
    assert _packs(cm) == ["w0#conv:16", "w1#conv:8"]
    rep = cm.stats["tuning"]
    assert rep["covered"] == 0 and rep["by_log"] == {str(tmp_path / "t.jsonl"): 0}
    # the report names the log's two targets, other CPU features and another CPU
    assert sorted(t.get("cpu") for t in rep["other_targets"]["logs"][str(tmp_path / "t.jsonl")]) \
        == sorted([t.target["cpu"], "other"])
    assert rep["other_targets"]["build"] == [t.target]
    assert build_model(g, params=p).stats["tuning"] == {"workloads": 2, "covered": 0, "logs": [],
                                                       "by_log": {}}


def test_a_record_outside_todays_space_falls_back_to_the_default(tmp_path, no_shipped):
    t = _conv3x3_task()
    log = TuningLog(tmp_path / "t.jsonl")
    log.append(Record(t.key, t.target, {"conv_out_block": 5, "ow_tile": 7}, [1.0]))
    g, p = _model()
    cm = build_model(g, params=p, tuning_log=str(tmp_path / "t.jsonl"))
    assert _packs(cm) == ["w0#conv:16", "w1#conv:8"]


def test_logs_in_the_shipped_folder_apply_without_being_asked_for(no_shipped):
    t = _conv3x3_task()
    TuningLog(no_shipped / "this-machine.jsonl").append(
        Record(t.key, t.target, {"conv_out_block": 8, "ow_tile": 14}, [1.0]))
    g, p = _model()
    cm = build_model(g, params=p)
    assert _packs(cm) == ["w0#conv:8", "w1#conv:8"]
    shipped = str(no_shipped / "this-machine.jsonl")
    assert cm.stats["tuning"] == {"workloads": 2, "covered": 1, "logs": [shipped],
                                  "by_log": {shipped: 1}}


def test_a_missing_log_is_named(no_shipped, tmp_path):
    g, p = _model()
    with pytest.raises(FileNotFoundError, match="tuning log .*nope.jsonl' does not exist"):
        build_model(g, params=p, tuning_log=str(tmp_path / "nope.jsonl"))


def _vta_model():
    rng = np.random.default_rng(3)
    w = rng.standard_normal((16, 16, 3, 3)).astype(np.float32) * 0.2
    x = input_node("x", (1, 16, 8, 8))
    y = make(Op.RELU, make(Op.CONV2D, x, param_node("w", w), pads=(1, 1, 1, 1)))
    return Graph((x,), (y,), ("y",)), {"w": w}


# without calib on purpose: this checks tiling, not accuracy
@pytest.mark.filterwarnings("ignore::compiler.quant.calibration.RandomCalibrationWarning")
def test_an_accelerator_build_takes_the_tuned_tiling(tmp_path, no_shipped):
    from compiler.autotune.task import vta_tasks
    from vta_hw.config import load_config
    g, p = _vta_model()
    (t,) = vta_tasks(g, p, load_config())
    other = next(c for c in t.space.knobs[0].candidates if c != t.space.default["tiling"])
    TuningLog(tmp_path / "v.jsonl").append(Record(t.key, t.target, {"tiling": other}, [1.0]))
    default = build_model(g, params=p, target="vta")
    tuned = build_model(g, params=p, target="vta", tuning_log=str(tmp_path / "v.jsonl"))
    assert tuned.stats["tuning"]["covered"] == 1 == tuned.stats["tuning"]["workloads"]
    th, tw, toc, tic, tkh, vt, wres = other
    (st,) = tuned.plan.layer_stats.values()
    assert st["tiling"] == (f"Tiling(th={th}, tw={tw}, toc={toc}, tic={tic}, tkh={tkh}, vt={vt}, "
                            f"wres={wres})")
    assert st["tiling"] != next(iter(default.plan.layer_stats.values()))["tiling"]
    x = np.random.default_rng(4).standard_normal((1, 16, 8, 8)).astype(np.float32)
    outs = []
    for cm in (default, tuned):
        m = load_module(cm, device="fsim")
        m.set_input("x", x)
        m.run()
        outs.append(m.get_output(0))
    np.testing.assert_array_equal(outs[0], outs[1])       # the same int8 arithmetic
