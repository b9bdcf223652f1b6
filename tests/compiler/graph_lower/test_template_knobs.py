"""Every knob of every CPU template's space is honoured: moving one knob off its default
changes the lowered loop IR and the kernel still matches numpy; the default point lowers
exactly as no config does (today's hand-picked schedule)."""
from __future__ import annotations

import pytest
from lowering_cases import Model, run_group

from compiler.autotune.task import master_of
from compiler.codegen.llvm.target import host_target
from compiler.graph import Op, make
from compiler.graph_lower.lower import lower_group
from compiler.tir import lower


def _conv(m, o=16, c=8, groups=1, **attrs):
    x = m.input("x", (1, c, 10, 10))
    return make(Op.RELU, make(Op.CONV2D, x, m.param("w", (o, c // groups, 3, 3)),
                              pads=(1, 1, 1, 1), groups=groups, **attrs))


CASES = {
    "conv2d_nchw": (lambda m: _conv(m), None),
    "conv2d_nchwc": (lambda m: _conv(m), 8),
    "depthwise_conv2d_nchw": (lambda m: _conv(m, o=8, groups=8, strides=(2, 2)), None),
    # 4 row tiles: fewer run "rows" as "tiles" (topi.dense.schedule_dense)
    "dense": (lambda m: make(Op.RELU, make(Op.DENSE, m.input("x", (16, 32)),
                                           m.param("w", (24, 32)))), None),
    "pool2d_nchw": (lambda m: make(Op.MAX_POOL, m.input("x", (1, 4, 9, 9)), kernel=(3, 3),
                                   pads=(1, 1, 1, 1)), None),
}


def _groups(name):
    build, block = CASES[name]
    m = Model()
    groups, params = m.groups(build(m), layout_block=block)
    for g in groups:
        got = master_of(g, host_target())
        if got is not None and got[0].name == name:
            return g, got[0].space(got[1]), params
    raise AssertionError(f"no group with master {name}")


def _ir(group, config=None) -> str:
    k = lower_group(group, "k", None, config)
    return str(lower(k.schedule, k.args, "k"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_default_point_is_the_untuned_schedule(name):
    g, space, _ = _groups(name)
    assert _ir(g, space.default) == _ir(g)


@pytest.mark.parametrize("name,knob,value", [
    ("conv2d_nchw", "conv_out_block", 4),      # 4 fp32 = one 128-bit vector
    ("conv2d_nchw", "ow_tile", 4),
    ("conv2d_nchw", "par_depth", 2),
    ("conv2d_nchwc", "ow_tile", 4),
    ("conv2d_nchwc", "par_depth", 2),
    ("depthwise_conv2d_nchw", "ow_vec", 4),
    ("depthwise_conv2d_nchw", "par_depth", 3),   # default 2: per-channel tasks, pad inside
    ("dense", "dense_block", 4),
    ("dense", "mr", 2),
    ("dense", "par", "rows"),
    ("dense", "par", "panels"),
    ("pool2d_nchw", "par_depth", 2),
])
def test_each_knob_changes_the_loop_ir_and_stays_correct(name, knob, value):
    g, space, params = _groups(name)
    assert space.default[knob] != value
    cfg = space.point(**{knob: value})
    assert _ir(g, cfg) != _ir(g)
    run_group(g, params, config=cfg)
