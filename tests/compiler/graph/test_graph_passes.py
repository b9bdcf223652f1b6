"""Each pass on small hand-built graphs: expected IR compared structurally, outputs preserved."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.graph import Graph, Kind, Op, default_pipeline, input_node, make, optimize, param_node, run
from compiler.graph.ir import Node
from compiler.graph.passes import (alter_layout, eliminate_dead_code, fold_batch_norm, fold_constants, fuse_ops,
                                   infer_types, plan_memory)
from compiler.graph.passes.fuse_ops import fusion_groups
from compiler.graph.registry import kind_of
from compiler.graph.verify import verify

R = np.random.default_rng(3)


def rand(*shape):
    return R.standard_normal(shape).astype(np.float32)


class P:
    """Params under construction: P()('w', array) -> PARAM node."""

    def __init__(self):
        self.values: dict[str, np.ndarray] = {}

    def __call__(self, name, value):
        self.values[name] = np.asarray(value)
        return param_node(name, self.values[name])


def same_outputs(g1, p1, g2, p2, feeds, rel=1e-5):
    for a, b in zip(run(g1, p1, feeds), run(g2, p2, feeds), strict=True):
        assert np.abs(a - b).max() <= rel * max(np.abs(b).max(), 1e-6)


def conv_bn_graph(with_bias: bool):
    p = P()
    x = input_node("x", (1, 4, 6, 6))
    y = make(Op.CONV2D, x, p("w", rand(8, 4, 3, 3)), pads=(1, 1, 1, 1))
    if with_bias:
        y = make(Op.ADD, y, p("b", rand(8, 1, 1)))
    bn = make(Op.BATCH_NORM, y, p("g", rand(8)), p("be", rand(8)), p("m", rand(8)), p("v", np.abs(rand(8)) + 0.5),
              epsilon=1e-5)
    return Graph((x,), (make(Op.RELU, bn),), ("y",)), p.values


def test_infer_types_rebuilds_stale_nodes():
    x = input_node("x", (2, 3))
    stale = Node(Op.RELU, (x,), (), (9,), "float32")
    g, _ = infer_types(Graph((x,), (stale,)), {})
    assert g.outputs[0] == make(Op.RELU, x)


def test_fold_constants_collapses_constant_subgraph():
    p = P()
    x = input_node("x", (2, 3))
    a, b = p("a", rand(3)), p("b", rand(3))
    g = Graph((x,), (make(Op.ADD, x, make(Op.MUL, make(Op.SQRT, make(Op.RELU, a)), b)),))
    g2, params = fold_constants(g, p.values)
    (folded,) = [n for n in g2.nodes() if n.op is Op.PARAM]
    assert g2.outputs[0] == make(Op.ADD, x, folded)
    np.testing.assert_allclose(params[folded.name], np.sqrt(np.maximum(p.values["a"], 0)) * p.values["b"])
    assert p.values.keys() == {"a", "b"}  # input params untouched


@pytest.mark.parametrize("with_bias", [False, True])
def test_fold_batch_norm_into_conv(with_bias):
    g, params = conv_bn_graph(with_bias)
    g2, p2 = fold_batch_norm(g, params)
    verify(g2, p2)
    relu = g2.outputs[0]
    add = relu.src[0]
    conv, bias = add.src
    assert (relu.op, add.op, conv.op, bias.op) == (Op.RELU, Op.ADD, Op.CONV2D, Op.PARAM)
    assert conv.src[0] == g.inputs[0] and conv.src[1].name == "w_bnfold" and bias.shape == (8, 1, 1)
    assert not any(n.op is Op.BATCH_NORM for n in g2.nodes())
    same_outputs(g, params, g2, p2, {"x": rand(1, 4, 6, 6)})
    g3, p3 = eliminate_dead_code(g2, p2)
    assert set(p3) == {"w_bnfold", bias.name}


def test_batch_norm_without_foldable_conv_becomes_scale_shift():
    p = P()
    x = input_node("x", (1, 3, 4, 4))
    conv = make(Op.CONV2D, x, p("w", rand(3, 3, 1, 1)))
    bn = make(Op.BATCH_NORM, conv, p("g", rand(3)), p("b", rand(3)), p("m", rand(3)), p("v", np.ones(3)),
              epsilon=1e-3)
    g = Graph((x,), (bn, conv))  # the conv is also an output: it must not change
    g2, p2 = fold_batch_norm(g, p.values)
    out = g2.outputs[0]
    assert out.op is Op.ADD and out.src[0].op is Op.MUL and out.src[0].src[0] == conv
    assert g2.outputs[1] == conv
    same_outputs(g, p.values, g2, p2, {"x": rand(1, 3, 4, 4)})


def test_dead_code_removes_noops_and_unused_params():
    p = P()
    x = input_node("x", (1, 8, 2, 2))
    y = make(Op.RESHAPE, make(Op.RESHAPE, x, newshape=(8, 4)), newshape=(1, 8, 2, 2))
    y = make(Op.LAYOUT_TRANSFORM, make(Op.LAYOUT_TRANSFORM, y, src_layout="NCHW", dst_layout="NCHW4c"),
             src_layout="NCHW4c", dst_layout="NCHW")
    y = make(Op.TRANSPOSE, make(Op.CAST, y, to="float32"), perm=(0, 1, 2, 3))
    y = make(Op.ADD, y, p("b", rand(1)))
    p("unused", rand(5))
    g, params = eliminate_dead_code(Graph((x,), (y,)), p.values)
    assert g.outputs[0] == make(Op.ADD, x, param_node("b", p.values["b"]))
    assert list(params) == ["b"]


def _names(g: Graph) -> list[str]:
    return [n.attr("name") for n in g.nodes() if n.op is Op.FUSED]


def test_fuse_conv_bias_relu_and_residual():
    p = P()
    x = input_node("x", (1, 4, 6, 6))
    a = make(Op.RELU, make(Op.ADD, make(Op.CONV2D, x, p("w1", rand(4, 4, 3, 3)), pads=(1, 1, 1, 1)), p("b1", rand(4, 1, 1))))
    b = make(Op.ADD, make(Op.CONV2D, a, p("w2", rand(4, 4, 3, 3)), pads=(1, 1, 1, 1)), p("b2", rand(4, 1, 1)))
    out = make(Op.RELU, make(Op.ADD, b, x))
    g = Graph((x,), (out,), ("y",))
    g2, p2 = fuse_ops(g, p.values)
    verify(g2, p2)
    assert _names(g2) == ["fused_conv2d_add_relu", "fused_conv2d_add_add_relu"]
    last = g2.outputs[0]
    assert last.attr("pattern") == "OUT_EWISE_FUSABLE"
    assert [s.op for s in last.src] == [Op.FUSED, Op.PARAM, Op.PARAM, Op.INPUT]
    assert [n.name for n in last.attr("body").inputs] == ["p0", "p1", "p2", "p3"]
    same_outputs(g, p.values, g2, p2, {"x": rand(1, 4, 6, 6)})


def test_fuse_rules_by_kind():
    p = P()
    x = input_node("x", (2, 8, 4, 4))
    conv = make(Op.CONV2D, x, p("w", rand(8, 8, 1, 1)))
    relu = make(Op.RELU, conv)
    pooled = make(Op.GLOBAL_AVG_POOL, relu)        # reduction: cannot join conv's group (one master)
    flat = make(Op.RESHAPE, pooled, newshape=(2, 8))  # after a reduction: its own group
    soft = make(Op.SOFTMAX, flat, axis=1)          # opaque: alone
    sq = make(Op.MUL, soft, soft)                  # injective
    mean = make(Op.REDUCE_MEAN, make(Op.SIGMOID, sq), axes=(1,), keepdims=1)  # injective -> reduction fuses
    shared = make(Op.TANH, x)                      # two consumers: stays a group root
    out2 = make(Op.ADD, shared, make(Op.SQRT, make(Op.RELU, shared)))
    g = Graph((x,), (mean, out2))
    groups = fusion_groups(g)
    as_ops = sorted(tuple(m.op.name for m in ms) for ms in groups.values())
    assert as_ops == sorted([("CONV2D", "RELU"), ("GLOBAL_AVG_POOL",), ("RESHAPE",), ("SOFTMAX",),
                             ("MUL", "SIGMOID", "REDUCE_MEAN"), ("TANH",), ("RELU", "SQRT", "ADD")])
    assert kind_of(Op.CONV2D) is Kind.OUT_EWISE_FUSABLE and kind_of(Op.SOFTMAX) is Kind.OPAQUE
    g2, p2 = fuse_ops(g, p.values)
    same_outputs(g, p.values, g2, p2, {"x": rand(2, 8, 4, 4)})


def conv_chain(channels=8):
    p = P()
    x = input_node("x", (1, channels, 5, 5))
    y = make(Op.CONV2D, x, p("w1", rand(channels, channels, 3, 3)), pads=(1, 1, 1, 1))
    y = make(Op.RELU, make(Op.ADD, y, p("b1", rand(channels, 1, 1))))
    y = make(Op.CONV2D, y, p("w2", rand(channels, channels, 3, 3)), pads=(1, 1, 1, 1))
    y = make(Op.ADD, make(Op.CLIP, y, min=0.0, max=6.0), y)
    return Graph((x,), (make(Op.MAX_POOL, y, kernel=(2, 2), strides=(2, 2)),), ("y",)), p.values


def test_alter_layout_blocks_convs_and_cancels_transforms():
    g, params = conv_chain()
    g2, p2 = alter_layout(g, params, block=4)
    g2, p2 = fold_constants(g2, p2)
    g2, p2 = eliminate_dead_code(g2, p2)
    verify(g2, p2)
    lts = [(n.attr("src_layout"), n.attr("dst_layout")) for n in g2.nodes() if n.op is Op.LAYOUT_TRANSFORM]
    assert lts == [("NCHW", "NCHW4c"), ("NCHW4c", "NCHW")]  # once in, once out before the pool
    convs = [n for n in g2.nodes() if n.op is Op.CONV2D]
    assert [(c.attr("data_layout"), c.attr("kernel_layout"), c.shape) for c in convs] == \
        [("NCHW4c", "OIHW4i4o", (1, 2, 5, 5, 4))] * 2
    assert all(p2[c.src[1].name].shape == (2, 2, 3, 3, 4, 4) for c in convs)
    same_outputs(g, params, g2, p2, {"x": rand(1, 8, 5, 5)})


def test_alter_layout_leaves_indivisible_channels_and_checks_block():
    g, params = conv_chain(channels=6)
    assert alter_layout(g, params, block=4)[0] == g
    with pytest.raises(ValueError, match="block must be a positive int, not 0"):
        alter_layout(g, params, block=0)


def test_plan_memory_reuses_buffers():
    x = input_node("x", (1024,))
    y = x
    for op in (Op.RELU, Op.SIGMOID, Op.TANH, Op.SQRT, Op.ERF):
        y = make(op, y)
    plan = plan_memory(Graph((x,), (y,)))
    assert plan.unplanned_bytes == 5 * 4096
    assert plan.slot_bytes == (4096, 4096) and plan.planned_bytes == 8192
    assert plan.peak_live_bytes == 8192
    assert [plan.storage[n] for n in Graph((x,), (y,)).nodes()[1:]] == [0, 1, 0, 1, 0]


def test_plan_memory_keeps_outputs_and_grows_slots():
    x = input_node("x", (256,))
    a = make(Op.RELU, x)                                 # 1 KiB, output: never freed
    b = make(Op.CONCAT, a, a, axis=0)                    # 2 KiB
    c = make(Op.CONCAT, b, b, axis=0)                    # 4 KiB, b freed
    d = make(Op.CONCAT, c, c, axis=0)                    # 8 KiB: grows b's slot; c freed
    plan = plan_memory(Graph((x,), (d, a)))
    s = plan.storage
    assert len({s[a], s[b], s[c]}) == 3 and s[d] == s[b]
    assert plan.planned_bytes == 1024 + 8192 + 4096 and plan.unplanned_bytes == 1024 + 2048 + 4096 + 8192


def test_pipeline_is_flat_and_named():
    assert [p.name for p in default_pipeline()] == ["infer_types", "fold_constants", "fold_batch_norm",
                                                    "eliminate_dead_code", "fuse_ops"]
    assert [p.name for p in default_pipeline(16, fuse=False)][4:] == ["alter_layout[16]", "fold_constants",
                                                                    "eliminate_dead_code"]
    g, params = conv_bn_graph(True)
    seen = []
    res = optimize(g, params, layout_block=4, on_pass=lambda name, gg, pp: seen.append(name))
    assert seen == list(res.passes)
    assert all(n.op in (Op.INPUT, Op.PARAM, Op.FUSED) for n in res.graph.nodes())
    same_outputs(g, params, res.graph, res.params, {"x": rand(1, 4, 6, 6)})


def test_the_memory_plan_does_not_depend_on_the_hash_seed():
    """Slots are freed in read order, not a set's: the same model plans (and so builds) the
    same module in every process, whatever PYTHONHASHSEED is."""
    import os
    import subprocess
    import sys
    code = ("from compiler.graph import optimize; from compiler.frontend.onnx import from_onnx\n"
            "from tests.models.builders import build_resnet18\n"
            "opt = optimize(*from_onnx(build_resnet18(size=32)))\n"
            "print([opt.memory_plan.storage[n] for n in opt.graph.nodes() "
            "if n in opt.memory_plan.storage])")
    plans = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, env=dict(os.environ, PYTHONHASHSEED=seed)).stdout
             for seed in ("1", "2", "3", "4")}
    assert len(plans) == 1 and plans.pop().startswith("[")
