"""Builds apply tuning logs: per workload the best record of the exact target (triple, CPU,
code features), else the best of a sibling CPU of the same ISA class, the default elsewhere;
the build report counts the covered workloads and the siblings' records; logs in the shipped
folder apply without being asked for."""
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


# Fixture CPUs, so the tests hold on any machine (builds only, nothing runs): znver1,
# znver2 and haswell are one ISA class (AVX2, 256-bit, no VNNI/BF16/AMX), skylake-avx512
# another (512-bit).
ZNVER1, ZNVER2, HASWELL = "llvm -mcpu=znver1", "llvm -mcpu=znver2", "llvm -mcpu=haswell"
SKYLAKE_AVX512 = "llvm -mcpu=skylake-avx512"


def _task_for(target, weight="16x8x3x3"):
    g, p = _model()
    (t,) = [t for t in llvm_tasks(optimize(g, p).graph, target) if weight in t.key]
    return t


def test_a_siblings_record_applies_and_is_reported_another_class_is_refused(tmp_path,
                                                                            no_shipped):
    t = _task_for(ZNVER1)
    path = str(tmp_path / "t.jsonl")
    TuningLog(path).append(Record(t.key, t.target, {"conv_out_block": 4, "ow_tile": 7}, [1.0]))
    g, p = _model()
    cm = build_model(g, params=p, target=ZNVER2, tuning_log=path)
    assert _packs(cm) == ["w0#conv:4", "w1#conv:8"]          # znver1's record, on znver2
    rep = cm.stats["tuning"]
    assert rep["covered"] == 1 and rep["by_log"] == {path: 1}
    assert rep["sibling"] == {"znver1": 1} and rep["sibling_class"] == "avx2, 256-bit"
    assert "other_targets" not in rep
    # skylake-avx512 is 512-bit: another class, the record is refused and the log named
    cm = build_model(g, params=p, target=SKYLAKE_AVX512, tuning_log=path)
    assert "w0#conv:4" not in _packs(cm)
    rep = cm.stats["tuning"]
    assert rep["covered"] == 0 and rep["by_log"] == {path: 0} and "sibling" not in rep
    assert [x["cpu"] for x in rep["other_targets"]["logs"][path]] == ["znver1"]
    assert [x["cpu"] for x in rep["other_targets"]["build"]] == ["skylake-avx512"]


def test_the_exact_targets_record_wins_over_a_cheaper_siblings(tmp_path, no_shipped):
    own, sib = _task_for(ZNVER2), _task_for(ZNVER1)
    sib1x1 = _task_for(ZNVER1, "8x16x1x1")
    log = TuningLog(tmp_path / "t.jsonl")
    log.append(Record(own.key, own.target, {"conv_out_block": 2, "ow_tile": 7}, [5.0]))
    log.append(Record(sib.key, sib.target, {"conv_out_block": 4, "ow_tile": 7}, [1.0]))
    log.append(Record(sib1x1.key, sib1x1.target, dict(sib1x1.space.default.values,
                                                      conv_out_block=4), [1.0]))
    g, p = _model()
    cm = build_model(g, params=p, target=ZNVER2, tuning_log=str(log.path))
    # w0: znver2's own record (cost 5) over znver1's (cost 1); w1: znver1's, none of its own
    assert _packs(cm) == ["w0#conv:2", "w1#conv:4"]
    assert cm.stats["tuning"]["covered"] == 2 and cm.stats["tuning"]["sibling"] == {"znver1": 1}


def test_among_siblings_the_lowest_cost_record_applies(tmp_path, no_shipped):
    path = str(tmp_path / "t.jsonl")
    for target, block, cost in ((ZNVER1, 2, 2.0), (HASWELL, 4, 1.0)):
        t = _task_for(target)
        TuningLog(path).append(Record(t.key, t.target, {"conv_out_block": block, "ow_tile": 7},
                                      [cost]))
    g, p = _model()
    cm = build_model(g, params=p, target=ZNVER2, tuning_log=path)
    assert _packs(cm) == ["w0#conv:4", "w1#conv:8"]
    assert cm.stats["tuning"]["sibling"] == {"haswell": 1}


def test_system_features_do_not_break_an_exact_match_code_features_do(tmp_path, no_shipped):
    # the same CPU in a VM that hides RDSEED and XSAVES: still the exact target, not a sibling
    t = _task_for(ZNVER2)
    feats = [f for f in t.target["features"] if f[1:] not in ("rdseed", "xsaves")]
    vm = dict(t.target, features=feats + ["-rdseed", "-xsaves"])
    path = str(tmp_path / "t.jsonl")
    TuningLog(path).append(Record(t.key, vm, {"conv_out_block": 4, "ow_tile": 7}, [1.0]))
    g, p = _model()
    cm = build_model(g, params=p, target=ZNVER2, tuning_log=path)
    assert _packs(cm) == ["w0#conv:4", "w1#conv:8"]
    assert cm.stats["tuning"]["covered"] == 1 and "sibling" not in cm.stats["tuning"]
    # znver2 plus AVX-512 (a code feature that changes the class): neither exact nor sibling
    avx512 = dict(t.target, features=sorted(set(t.target["features"]) - {"-avx512f"}
                                            | {"+avx512f"}))
    path = str(tmp_path / "u.jsonl")
    TuningLog(path).append(Record(t.key, avx512, {"conv_out_block": 4, "ow_tile": 7}, [1.0]))
    assert build_model(g, params=p, target=ZNVER2, tuning_log=path).stats["tuning"][
        "covered"] == 0


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
