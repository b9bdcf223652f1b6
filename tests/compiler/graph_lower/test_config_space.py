"""ConfigSpace: knobs, the default point (today's hand-picked schedule), validation messages."""
from __future__ import annotations

import pytest

from compiler.codegen.llvm.target import Target
from compiler.graph import Op, input_node, make
from compiler.graph_lower.space import Config, ConfigSpace, Knob
from compiler.graph_lower.strategy import Workload, default_registry

SPACE = ConfigSpace((Knob("ob", (16, 8, 1), 16), Knob("tile", (7, 14, 28), 14)))


def test_the_default_point_is_every_knob_at_its_default():
    assert SPACE.default == Config((("ob", 16), ("tile", 14)))
    assert SPACE.default["tile"] == 14 and SPACE.default.as_dict() == {"ob": 16, "tile": 14}
    assert SPACE.size == 9


def test_a_point_overrides_some_knobs():
    assert SPACE.point(tile=7).as_dict() == {"ob": 16, "tile": 7}


def test_the_empty_space_has_one_point():
    assert ConfigSpace().size == 1 and ConfigSpace().default == Config()


@pytest.mark.parametrize("make_it,message", [
    (lambda: Knob("ob", (16, 8), 4), "knob 'ob': default must be one of (16, 8), not 4"),
    (lambda: SPACE.point(tile=5), "knob 'tile' must be one of (7, 14, 28), not 5"),
    (lambda: SPACE.point(vec=8), "config space has no knob 'vec'; its knobs are ['ob', 'tile']"),
])
def test_bad_values_are_refused_with_the_knob_and_its_candidates(make_it, message):
    with pytest.raises(ValueError) as err:
        make_it()
    assert str(err.value) == message


def test_an_unknown_knob_of_a_config_is_a_key_error():
    with pytest.raises(KeyError, match="config has no knob 'vec'"):
        SPACE.default["vec"]


#: the target the hand-picked defaults were made for (512-bit vectors), fixed so that the
#: table holds on any build machine
_AVX512 = Target("x86_64-unknown-linux-gnu", "znver4", "+avx2,+fma,+avx512f", False)
_AVX2 = Target("x86_64-unknown-linux-gnu", "haswell", "+avx2,+fma", False)


def _space(node, name, target=_AVX512):
    w = Workload(node, target)
    impl = next(i for i in default_registry().implementations(node.op) if i.name == name)
    return impl.space(w)


def _conv(o, c=8, groups=1):
    return make(Op.CONV2D, input_node("x", (1, c, 8, 8)), input_node("w", (o, c // groups, 3, 3)),
                groups=groups)


@pytest.mark.parametrize("node,name,default,size", [
    # conv_out_block: 16, 8 or 1 as topi.conv2d.conv_out_block; ow_tile 14; par_depth 0 (one
    # thread) below SERIAL_MACS, as these: 64 x 8x8 x 8 x 3x3 = 295k multiply-adds
    (_conv(64), "conv2d_nchw", {"conv_out_block": 16, "ow_tile": 14, "par_depth": 0}, 5 * 6 * 3),
    (_conv(24), "conv2d_nchw", {"conv_out_block": 8, "ow_tile": 14, "par_depth": 0}, 4 * 6 * 3),
    (_conv(6), "conv2d_nchw", {"conv_out_block": 1, "ow_tile": 14, "par_depth": 0}, 2 * 6 * 3),
    (_conv(64, c=512), "conv2d_nchw",                # 18.9 M: parallel over 3 axes
     {"conv_out_block": 16, "ow_tile": 14, "par_depth": 3}, 5 * 6 * 2),
    (_conv(8, groups=2), "group_conv2d_nchw", {"ow_vec": 16}, 4),
    (make(Op.CONV2D_TRANSPOSE, input_node("x", (1, 4, 5, 5)), input_node("w", (4, 2, 3, 3))),
     "conv2d_transpose_nchw", {"ow_vec": 16}, 4),
    # M < 64 rows: dense_block 16, 8 or 1 as topi.dense.dense_block; mr 4; par "tiles"
    (make(Op.DENSE, input_node("x", (2, 8)), input_node("w", (40, 8))), "dense",
     {"dense_block": 8, "mr": 4, "par": "tiles"}, 4 * 4 * 3),
    (make(Op.MATMUL, input_node("a", (2, 8)), input_node("b", (8, 10))), "matmul_dense",
     {"dense_block": 1, "mr": 4, "par": "tiles"}, 2 * 4 * 3),
    (make(Op.MATMUL, input_node("a", (2, 8)), input_node("b", (8, 10))), "batch_matmul",
     {"mr": 4, "nb": 16, "pack_b": False}, 4 * 5 * 2),
    (make(Op.MAX_POOL, input_node("x", (1, 2, 4, 4)), kernel=(2, 2)), "pool2d_nchw",
     {"par_depth": 3}, 2),
    (make(Op.SOFTMAX, input_node("x", (2, 4)), axis=1), "softmax", {}, 1),
    (make(Op.RELU, input_node("x", (2, 4))), "relu", {}, 1),
])
def test_default_points_are_the_hand_picked_schedules(node, name, default, size):
    space = _space(node, name)
    assert space.default.as_dict() == default
    assert space.size == size


@pytest.mark.parametrize("target,ow_tile", [(_AVX512, 14), (_AVX2, 7)])
def test_the_direct_register_tile_fits_the_vector_registers(target, ow_tile):
    # 16 output channels: one 512-bit vector x 14 columns, or two 256-bit ones x 7 (14
    # accumulators either way; 2 x 14 spilled out of AVX2's 16 registers)
    assert _space(_conv(64, c=512), "conv2d_nchw", target).default["ow_tile"] == ow_tile
    assert _space(_conv(24, c=512), "conv2d_nchw", _AVX2).default["ow_tile"] == 14


@pytest.mark.parametrize("target,ow_vec", [
    # 256- and 512-bit vectors: a cap of 32 columns (whole 28-column rows, 28 of 56)
    (Target("x86_64-unknown-linux-gnu", "znver4", "+avx2,+fma,+avx512f", False), 32),
    (Target("x86_64-unknown-linux-gnu", "haswell", "+avx2,+fma", False), 32),
    (Target("aarch64-unknown-linux-gnu", "generic", "+neon", False), 16),
])
def test_the_depthwise_default_column_tile_follows_the_vector_width(target, ow_vec):
    impl = next(i for i in default_registry().implementations(Op.CONV2D)
                if i.name == "depthwise_conv2d_nchw")
    space = impl.space(Workload(_conv(8, groups=8), target))
    assert space.default.as_dict() == {"ow_vec": ow_vec, "par_depth": 2}
    assert space.size == 4 * 2


@pytest.mark.parametrize("target,block,ow_tile", [
    (_AVX512, 16, 7), (_AVX2, 8, 7),     # one vector a column: 7 accumulators
    (_AVX2, 16, 4),                      # two vectors a column: 4 columns, 8 accumulators
])
def test_the_blocked_depthwise_register_tile_fits_the_vector_registers(target, block, ow_tile):
    x = input_node("x", (1, 2, 8, 8, block))
    w = input_node("w", (2, 1, 3, 3, block))
    node = make(Op.CONV2D, x, w, groups=2 * block, data_layout=f"NCHW{block}c",
                kernel_layout=f"OIHW{block}o")
    assert _space(node, "depthwise_conv2d_nchwc", target).default.as_dict() == {
        "ow_tile": ow_tile, "par_depth": 2}
