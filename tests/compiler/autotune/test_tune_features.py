"""Cost-model features and the cost of choosing: a CPU candidate's features come from its
loop nest before the loop passes and agree with the lowered nest on code size and vector
width; small spaces rank every featurized point; choosing takes a tenth of measuring, and
the tuner reports both times."""
from __future__ import annotations

import time

import numpy as np
import pytest

from compiler import te
from compiler.autotune import features, search, tuner
from compiler.autotune.search import XGBSearch, make_strategy, random_points
from compiler.autotune.task import Task, llvm_tasks
from compiler.graph import Graph, Op, input_node, make, optimize, param_node
from compiler.graph_lower.space import ConfigSpace, Knob
from compiler.tir import lower
from compiler.tir.schedule_ops import schedule_to_func

_N_KINDS = 4                  # serial, parallel, vectorized, unrolled (``ForKind``)


def _scaled_copy():
    # C[i] = 2 A[i] over 64: split by 16 (parallel outer), the 16 by 4 (unrolled x vector 4)
    A = te.placeholder((64,), name="A")
    C = te.compute((64,), lambda i: A[i] * 2.0, name="C")
    s = te.create_schedule(C)
    outer, inner = s[C].split(C.op.axis[0], factor=16)
    mid, lanes = s[C].split(inner, factor=4)
    s[C].parallel(outer)
    s[C].unroll(mid)
    s[C].vectorize(lanes)
    return s, [A, C]


def test_features_before_the_loop_passes_count_unrolled_copies_and_vector_lanes():
    s, args = _scaled_copy()
    before = features.loop_features(schedule_to_func(s, args, "f"))
    after = features.loop_features(lower(s, args, "f"))
    tail = 2 * _N_KINDS       # par trip, depth, stmts, stores, lanes, vector ops (log2)
    # 4 unrolled copies of one 4-lane store (reading A once): 4 stores, 4 x (1 + 1) vector ops
    assert before[tail + 3] == after[tail + 3] == 2.0            # log2(4 stores)
    assert before[tail + 4] == after[tail + 4] == 2.0            # log2(4 lanes)
    assert before[tail + 5] == after[tail + 5] == np.log2(9)     # log2(8 + 1)
    assert before[tail] == after[tail] == 2.0                    # 4 parallel iterations


def _conv_task():
    w = np.random.default_rng(0).standard_normal((16, 8, 3, 3)).astype(np.float32)
    x = input_node("x", (1, 8, 12, 12))
    y = make(Op.CONV2D, x, param_node("w", w), pads=(1, 1, 1, 1), strides=(2, 2))
    (t,) = llvm_tasks(optimize(Graph((x,), (y,), ("y",)), {"w": w}).graph)
    return t


def test_cpu_candidates_are_featurized_without_the_loop_passes(monkeypatch):
    def no_passes(*a, **k):
        raise AssertionError("featurizing ran the loop passes")
    monkeypatch.setattr("compiler.tir.lowering.run_pipeline", no_passes)
    t = _conv_task()
    pts = random_points(t.space, 6, (), np.random.default_rng(0))
    vecs = [features.featurize(t, c) for c in pts]
    assert len({len(v) for v in vecs}) == 1 and len({tuple(v) for v in vecs}) > 1
    assert set(pts) <= set(t.features)           # cached per config


SPACE = ConfigSpace((Knob("a", tuple(range(16)), 0), Knob("b", tuple(range(16)), 0)))


def _cost(cfg) -> float:
    return 1.0 + 0.1 * (cfg["a"] - 11) ** 2 + 0.05 * (cfg["b"] - 5) ** 2


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(features.FEATURIZERS, "toy", lambda t, c: [float(c["a"]), float(c["b"])])
    return Task("toy", "toy", SPACE, {}, {"target": "toy"}, 1, "toy")


def test_a_small_space_is_ranked_whole_once_its_points_are_featurized(toy):
    everything = random_points(SPACE, SPACE.size, (), np.random.default_rng(0))
    for c in everything:
        features.featurize(toy, c)
    s = XGBSearch(eps=0.0, pool=0)             # score only what is featurized already
    seen = random_points(SPACE, 12, (), np.random.default_rng(1))
    s.observe(toy, [(c, _cost(c)) for c in seen])
    got = s.propose(toy, 4, set(seen), np.random.default_rng(2))
    rest = [c for c in everything if c not in seen and c not in got]
    model = s.models["toy"]
    score = lambda cs: model.predict([features.featurize(toy, c) for c in cs])  # noqa: E731
    assert len(got) == 4 and score(got).min() >= score(rest).max()


class _Timed:
    """Random search that records the ``time_s`` it is given per proposal."""

    given: list = []

    def __init__(self):
        self.inner = make_strategy("random")

    def propose(self, task, n, tried, rng, time_s=None):
        _Timed.given.append((task.key, time_s))
        return self.inner.propose(task, n, tried, rng, time_s)

    def observe(self, task, results):
        pass

    def pretrain(self, records, tasks):
        pass


class _SleepRunner:
    def __init__(self, seconds):
        self.seconds, self.took = seconds, []

    def measure(self, task, configs):
        start = time.monotonic()
        time.sleep(self.seconds * len(configs))
        self.took.append((task.key, time.monotonic() - start))
        return [tuner.MeasureResult(costs=[_cost(c)]) for c in configs]


def test_choosing_a_round_may_take_a_tenth_of_measuring_the_last(toy, monkeypatch):
    monkeypatch.setitem(search.STRATEGIES, "timed", _Timed)
    monkeypatch.setattr(tuner, "MIN_CHOOSE_S", 0.0)
    _Timed.given = []
    runner = _SleepRunner(0.02)
    (res,) = tuner.tune([toy], runner, trials=13, strategy="timed", batch=4)
    # rounds of 1, 4, 4, 4 candidates: each choice is given a tenth of the round before
    assert [k for k, _ in _Timed.given] == ["toy"] * 4
    for (_, given), (_, took) in zip(_Timed.given[1:], runner.took):
        assert given == pytest.approx(tuner.CHOOSE_SHARE * took, rel=0.05)
    # the result splits the session's time into choosing and measuring
    assert res.measure_s == pytest.approx(sum(t for _, t in runner.took), rel=0.05)
    assert 0 <= res.choose_s < 0.1 * res.measure_s


def test_before_the_model_can_rank_it_proposes_neighbours_of_the_best_point(toy):
    s = XGBSearch()
    for k in range(8):              # eight workloads of one result each: nothing to contrast
        s.observe(Task(f"w{k}", "toy", SPACE, {}, {"target": "toy"}, 1, f"w{k}"),
                  [(SPACE.point(a=k, b=k), 1.0 + k)])
    best = SPACE.point(a=5, b=5)
    s.observe(toy, [(best, 2.0)])
    assert not s.models["toy"].trained
    got = s.propose(toy, 4, {best}, np.random.default_rng(0))
    assert set(got) == {SPACE.point(a=4, b=5), SPACE.point(a=6, b=5), SPACE.point(a=5, b=4),
                        SPACE.point(a=5, b=6)}
