"""Transfer: the cost model pre-trained on a log of one conv shape guides the search on
another shape from its first batch; log keys rebuild into the tasks they came from."""
from __future__ import annotations

import math

import numpy as np
import pytest

from compiler.autotune.record import Record
from compiler.autotune.search import XGBSearch, random_points
from compiler.autotune.task import llvm_tasks, vta_conv2d_task
from compiler.autotune.transfer import samples, task_from_key
from compiler.graph import Graph, Op, input_node, make, optimize, param_node
from vta_hw.config import load_config


def _conv_task(C, O, H):
    # stride 2: no Winograd knob (its candidates take seconds each to lower and featurize)
    w = np.random.default_rng(0).standard_normal((O, C, 3, 3)).astype(np.float32)
    x = input_node("x", (1, C, H, H))
    y = make(Op.RELU, make(Op.CONV2D, x, param_node("w", w), pads=(1, 1, 1, 1),
                           strides=(2, 2)))
    (t,) = llvm_tasks(optimize(Graph((x,), (y,), ("y",)), {"w": w}).graph)
    return t


def _cost(cfg) -> float:
    # a known function of the config, the same rule on every shape: output-channel
    # block 4 and row tile 8 are best, the shallow parallel loop is worse
    return (1.0 + 0.5 * abs(math.log2(cfg["conv_out_block"]) - 2)
            + 0.3 * abs(math.log2(cfg["ow_tile"]) - 3) + 0.2 * (cfg["par_depth"] == 2))


@pytest.fixture(scope="module")
def source_log():
    src = _conv_task(8, 16, 16)
    pts = random_points(src.space, 24, (), np.random.default_rng(1))
    return src, [Record(src.key, src.target, dict(c.values), [_cost(c) * 1e-5]) for c in pts]


def test_a_log_of_one_shape_guides_the_first_batch_on_another(source_log):
    src, records = source_log
    new = _conv_task(16, 32, 28)                      # a shape no record covers
    assert new.key != src.key
    search = XGBSearch(pool=32)
    search.pretrain(records, [new])
    assert search.models["llvm"].trained and search.models["llvm"].samples == 24
    first = search.propose(new, 8, {new.space.default}, np.random.default_rng(0))
    rand = random_points(new.space, 8, {new.space.default}, np.random.default_rng(0))
    guided, blind = np.mean([_cost(c) for c in first]), np.mean([_cost(c) for c in rand])
    everything = np.mean([_cost(c) for c in random_points(new.space, 10 ** 4, (),
                                                          np.random.default_rng(0))])
    # (0.9: the conv space gained padded channel blocks, which widen the spread)
    assert guided < blind and guided < 0.9 * everything, (guided, blind, everything)


def test_records_of_the_session_s_own_workloads_are_not_transfer(source_log):
    src, records = source_log
    assert samples(records, [src]) == []
    (task, pts), = samples(records, [_conv_task(16, 32, 28)], limit=6)
    assert task.key == src.key and len(pts) == 6
    costs = [c for _, c in pts]
    assert costs == sorted(costs) and costs[0] == min(r.cost for r in records)


def test_keys_rebuild_into_their_tasks(source_log):
    src, _ = source_log
    again = task_from_key(src.key, src.target)
    assert again.key == src.key and again.space == src.space
    vta = vta_conv2d_task(load_config(), (1, 16, 4, 4), (16, 16, 3, 3), (1, 1), (1, 1), shift=5)
    assert task_from_key(vta.key, vta.target).space == vta.space
    assert task_from_key("conv2d_nchw(garbage)", src.target) is None
    assert task_from_key("no_such_impl(1x2->1x2;float32;)", src.target) is None
