"""conv2d computes and CPU schedules: packed NCHW, depthwise, grouped; fused epilogues."""
from __future__ import annotations

import numpy as np
import pytest

import compiler.build
from compiler import te
from compiler.graph import Op, make
from compiler.graph.opdefs.nn import conv2d as ref_conv2d
from compiler.topi import conv2d as tconv


@pytest.mark.parametrize("n,c,h,w,o,k,stride,pad,dil", [
    (1, 3, 17, 19, 16, 3, 1, 1, 1),     # odd spatial sizes: partial column tiles
    (1, 8, 16, 16, 24, 3, 2, 1, 1),     # ob = 8, stride 2
    (2, 5, 9, 9, 6, 1, 1, 0, 1),        # ob = 1, 1x1, batch 2
    (1, 4, 12, 12, 16, 3, 1, 2, 2),     # dilation
])
def test_conv2d_nchw_packed_matches_reference(n, c, h, w, o, k, stride, pad, dil):
    ob = tconv.conv_out_block(o)
    data = te.placeholder((n, c, h, w), "float32", "data")
    kernel = te.placeholder((o // ob, c, k, k, ob), "float32", "kernel")
    acc, out = tconv.conv2d_nchw(data, kernel, (stride, stride), (pad,) * 4, (dil, dil))
    final = te.compute(out.shape, lambda *i: acc[i[0], i[1] // ob, i[2], i[3], i[1] % ob], name="final")
    s = te.create_schedule(final)
    tconv.schedule_conv2d_nchw(s, acc, final)
    pad_t = acc.op.reads()[0]
    args = [data, kernel] + ([pad_t] if pad_t is not data else []) + [final]
    f = compiler.build(s, args, name="conv", fp_contract=True)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, c, h, w)).astype("float32")
    wt = rng.standard_normal((o, c, k, k)).astype("float32")
    vals = [x, tconv.pack_conv_kernel(wt, ob)]
    if pad_t is not data:
        vals.append(np.zeros(pad_t.shape, "float32"))
    y = np.empty(final.shape, "float32")
    f(*vals, y)
    expected = ref_conv2d(x, wt, {"strides": (stride, stride), "pads": (pad,) * 4,
                                  "dilations": (dil, dil)})
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("c,o,h,w,ob,cols", [
    (16, 96, 4, 32, 4, 16),             # MobileNetV2's 16 -> 96 expansion, narrowed
    (5, 21, 3, 12, 8, 8),               # partial last channel block; cols 8 -> divisor 6
    (8, 8, 2, 7, 8, 16),                # a row narrower than the tile
])
def test_conv2d_cols_matches_reference(c, o, h, w, ob, cols):
    data = te.placeholder((1, c, h, w), "float32", "data")
    kernel = te.placeholder((-(-o // ob), c, 1, 1, ob), "float32", "kernel")
    conv = tconv.conv2d_nchw_cols(data, kernel, o)
    final = te.compute(conv.shape, lambda *i: conv[i] * 2.0, name="final")
    s = te.create_schedule(final)
    tconv.schedule_conv2d_cols(s, conv, final, ob, cols)
    f = compiler.build(s, [data, kernel, final], name="conv", fp_contract=True)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, c, h, w)).astype("float32")
    wt = rng.standard_normal((o, c, 1, 1)).astype("float32")
    y = np.empty(final.shape, "float32")
    f(x, tconv.pack_conv_kernel(wt, ob), y)
    np.testing.assert_allclose(y, 2 * ref_conv2d(x, wt, {}), rtol=1e-4, atol=1e-4)


def test_conv2d_cols_refuses_a_window_other_than_1x1():
    data = te.placeholder((1, 4, 8, 8), "float32", "data")
    with pytest.raises(ValueError, match=r"needs a 1x1 packed kernel over 4 channels"):
        tconv.conv2d_nchw_cols(data, te.placeholder((1, 4, 3, 3, 8), "float32", "k"))


def test_conv_bias_relu_residual_epilogue(case):
    x = case.input("x", (1, 16, 14, 14))
    res = case.input("res", (1, 32, 7, 7))
    w = case.rand_param("w", (32, 16, 3, 3), 0.2)
    b = case.rand_param("b", (32, 1, 1))
    y = make(Op.CONV2D, x, w, strides=(2, 2), pads=(1, 1, 1, 1))
    y = make(Op.RELU, make(Op.ADD, make(Op.ADD, y, b), res))
    cm, _ = case.check(y)
    assert cm.stats["kernels"] == 1          # conv + bias + residual + relu: one kernel


def test_depthwise_conv_with_clip(case):
    x = case.input("x", (1, 24, 15, 15))
    w = case.rand_param("w", (24, 1, 3, 3))
    y = make(Op.CONV2D, x, w, strides=(2, 2), pads=(1, 1, 1, 1), groups=24)
    case.check(make(Op.CLIP, y, min=0.0, max=6.0))


def test_grouped_conv(case):
    x = case.input("x", (1, 8, 10, 10))
    w = case.rand_param("w", (12, 4, 3, 3))
    case.check(make(Op.CONV2D, x, w, pads=(1, 0, 1, 2), groups=2))


def test_conv_with_reshape_epilogue_is_not_aligned(case):
    # flatten after the conv: the epilogue changes shape, so the conv runs at the root
    x = case.input("x", (1, 3, 8, 8))
    w = case.rand_param("w", (16, 3, 3, 3))
    y = make(Op.RELU, make(Op.CONV2D, x, w, strides=(2, 2), pads=(1, 1, 1, 1)))
    case.check(make(Op.RESHAPE, y, newshape=(1, 256)))


def test_blocked_nchwc_layout(case):
    # alter_layout(16): conv in NCHW16c with an OIHW16i16o kernel, residual in the blocked layout
    x = case.input("x", (1, 32, 9, 9))
    w1 = case.rand_param("w1", (32, 32, 3, 3), 0.2)
    w2 = case.rand_param("w2", (16, 32, 1, 1), 0.2)
    b = case.rand_param("b", (32, 1, 1))
    y = make(Op.RELU, make(Op.ADD, make(Op.CONV2D, x, w1, pads=(1, 1, 1, 1)), b))
    y = make(Op.ADD, y, x)
    z = make(Op.CONV2D, y, w2, strides=(2, 2))
    case.check(z, layout_block=16)


def test_conv_nchwc_compute_matches_reference():
    data = te.placeholder((1, 2, 7, 7, 8), "float32", "data")
    kernel = te.placeholder((2, 2, 3, 3, 8, 8), "float32", "kernel")
    conv = tconv.conv2d_nchwc(data, kernel, (1, 1), (1, 1, 1, 1))
    s = te.create_schedule(conv)
    tconv.schedule_conv2d_nchwc(s, conv, conv)
    f = compiler.build(s, [data, kernel, conv.op.reads()[0], conv], name="convc", fp_contract=True)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 16, 7, 7)).astype("float32")
    w = rng.standard_normal((16, 16, 3, 3)).astype("float32")
    xb = x.reshape(1, 2, 8, 7, 7).transpose(0, 1, 3, 4, 2).copy()
    wb = w.reshape(2, 8, 2, 8, 3, 3).transpose(0, 2, 4, 5, 3, 1).copy()
    y = np.empty(conv.shape, "float32")
    f(xb, wb, np.zeros(conv.op.reads()[0].shape, "float32"), y)
    expected = ref_conv2d(x, w, {"pads": (1, 1, 1, 1)})
    np.testing.assert_allclose(y, expected.reshape(1, 2, 8, 7, 7).transpose(0, 1, 3, 4, 2),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("tasks,rows,parts", [(3, 56, 7), (9, 56, 2), (2, 28, 14), (6, 112, 4),
                                               (1, 5, 5), (16, 7, 1), (24, 56, 1)])
def test_row_parts_reach_the_minimum_task_count_in_equal_parts(tasks, rows, parts):
    assert tconv._row_parts(tasks, rows) == parts
    assert rows % parts == 0
    assert tasks * parts >= tconv.MIN_PARALLEL_TASKS or parts == rows


def test_few_channel_blocks_run_parts_of_their_rows_in_parallel():
    """par_depth 2 over 3 channel blocks: the 12 rows are cut in 6 parts, 18 tasks."""
    from compiler.tir import ir as T
    from compiler.tir import lower
    from compiler.tir.visit import walk_stmt
    data = te.placeholder((1, 2, 12, 12, 8), "float32", "data")
    kernel = te.placeholder((3, 2, 1, 1, 8, 8), "float32", "kernel")
    conv = tconv.conv2d_nchwc(data, kernel)
    s = te.create_schedule(conv)
    tconv.schedule_conv2d_nchwc(s, conv, conv, 4, par_depth=2)
    func = lower(s, [data, kernel, conv], "convc")
    assert [st.extent for st in walk_stmt(func.body) if isinstance(st, T.For)
            and st.kind == T.ForKind.PARALLEL] == [T.const(18)]
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 16, 12, 12)).astype("float32")
    w = rng.standard_normal((24, 16, 1, 1)).astype("float32")
    y = np.empty(conv.shape, "float32")
    compiler.build(func)(x.reshape(1, 2, 8, 12, 12).transpose(0, 1, 3, 4, 2).copy(),
                         w.reshape(3, 8, 2, 8, 1, 1).transpose(0, 2, 4, 5, 3, 1).copy(), y)
    expected = ref_conv2d(x, w, {})
    np.testing.assert_allclose(y, expected.reshape(1, 3, 8, 12, 12).transpose(0, 1, 3, 4, 2),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("strides,pads,dil,groups,out_pad", [
    ((2, 2), (1, 1, 1, 1), (1, 1), 1, (1, 1)),
    ((1, 1), (0, 0, 0, 0), (2, 2), 1, (0, 0)),
    ((2, 3), (0, 1, 1, 0), (1, 1), 2, (0, 0)),
])
def test_conv2d_transpose(case, strides, pads, dil, groups, out_pad):
    x = case.input("x", (1, 4, 5, 6))
    w = case.rand_param("w", (4, 3, 3, 3))
    y = make(Op.CONV2D_TRANSPOSE, x, w, strides=strides, pads=pads, dilations=dil, groups=groups,
             output_padding=out_pad)
    case.check(make(Op.RELU, y))


@pytest.mark.parametrize("stride", [1, 2])
def test_depthwise_pads_inside_its_one_parallel_loop(stride):
    # par_depth 2: one fork-join per layer; the padded copy is per task, not a root stage
    from compiler import tir
    x = te.placeholder((1, 8, 10, 10), "float32", "x")
    k = te.placeholder((8, 1, 3, 3), "float32", "k")
    conv = tconv.depthwise_conv2d_nchw(x, k, (stride, stride), (1, 1, 1, 1))
    s = te.create_schedule(conv)
    tconv.schedule_depthwise_nchw(s, conv, conv, 4, par_depth=2)
    assert str(tir.lower(s, [x, k, conv], "dw")).count("# parallel") == 1
    f = compiler.build(s, [x, k, conv], name="dw", fp_contract=True)
    rng = np.random.default_rng(0)
    xv = rng.standard_normal((1, 8, 10, 10)).astype("float32")
    kv = rng.standard_normal((8, 1, 3, 3)).astype("float32")
    y = np.empty(conv.shape, "float32")
    f(xv, kv, y)
    expected = ref_conv2d(xv, kv, {"strides": (stride, stride), "pads": (1,) * 4,
                                   "dilations": (1, 1), "groups": 8})
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)
