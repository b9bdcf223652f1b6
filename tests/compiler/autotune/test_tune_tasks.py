"""Task extraction: one task per distinct master workload (equal layers share one, their
count is its weight), injective groups and one-point spaces need none; accelerator convs get
a space of tilings whose default is the tile search's pick."""
from __future__ import annotations

import numpy as np

from compiler.autotune.task import llvm_tasks, vta_conv2d_task
from compiler.graph import Graph, Op, input_node, make, optimize, param_node
from compiler.topi.vta.tiling import Conv2dShape, search
from vta_hw.config import load_config


def _graph():
    rng = np.random.default_rng(0)
    params = {}

    def param(name, shape):
        params[name] = rng.standard_normal(shape).astype(np.float32)
        return param_node(name, params[name])
    x = input_node("x", (1, 8, 10, 10))
    y = x
    for i in range(2):                                   # two equal convs: one workload
        y = make(Op.RELU, make(Op.CONV2D, y, param(f"w{i}", (8, 8, 3, 3)), pads=(1, 1, 1, 1)))
    y = make(Op.CONV2D, y, param("w2", (16, 8, 1, 1)))   # another shape: another task
    y = make(Op.GLOBAL_AVG_POOL, y)                      # no knobs: no task
    return optimize(Graph((x,), (y,), ("y",)), params).graph


def test_equal_layers_share_one_task_weighted_by_their_count():
    tasks = llvm_tasks(_graph())
    keys = [t.key for t in tasks]
    assert len(keys) == len(set(keys)) == 2
    weights = {t.key: t.weight for t in tasks}
    assert weights == {
        "conv2d_nchw(1x8x10x10,8x8x3x3c->1x8x10x10;float32;pads=(1, 1, 1, 1))": 2,
        "conv2d_nchw(1x8x10x10,16x8x1x1c->1x16x10x10;float32;)": 1}
    for t in tasks:
        assert t.kind == "llvm" and t.space.size > 1
        assert t.key.startswith("conv2d_nchw(") and t.target["cpu"]
        assert t.payload["node"].op is Op.FUSED


def test_the_workload_key_is_the_same_across_extractions():
    assert [t.key for t in llvm_tasks(_graph())] == [t.key for t in llvm_tasks(_graph())]


def test_an_accelerator_conv_task_lists_tilings_with_the_search_pick_as_default():
    cfg = load_config()
    t = vta_conv2d_task(cfg, (1, 32, 8, 8), (32, 32, 3, 3), (1, 1), (1, 1), shift=6, relu=True)
    s = Conv2dShape(1, 2, 8, 8, 2, 3, 3, 1, 1, 1, 1)
    p = search(s, cfg, 1, 2)
    assert t.space.default["tiling"] == (p.th, p.tw, p.toc, p.tic, p.tkh, p.vt, p.wres)
    vts = {c[5] for c in t.space.knobs[0].candidates}
    assert vts == {1, 2} and t.space.size > 8
    assert t.key == "vta_conv2d(1x16_i8w8a32_15_15_18_17;1x32x8x8;32x32x3x3;s1x1;p1x1;v1)"
