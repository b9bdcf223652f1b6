"""assign_layout: the sites and edges of a residual net, every choice computes the same
outputs, and the pass inserts exactly the transforms the choice implies."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from compiler.graph import Graph, Op, input_node, make, param_node, run
from compiler.graph.errors import GraphError
from compiler.graph.passes import assign_layout, eliminate_dead_code, fold_constants
from compiler.graph.passes.assign_layout import describe_layouts, layout_sites
from compiler.graph.verify import verify

R = np.random.default_rng(5)


def residual_net():
    """x -> conv a (+b, relu) -> conv b (+b) + x (residual) -> relu -> conv c -> pool."""
    vals = {}

    def p(name, *shape):
        vals[name] = R.standard_normal(shape).astype(np.float32) * 0.2
        return param_node(name, vals[name])
    x = input_node("x", (1, 16, 6, 6))
    y = make(Op.RELU, make(Op.ADD, make(Op.CONV2D, x, p("wa", 16, 16, 3, 3), pads=(1, 1, 1, 1),
                                        label="a"), p("ba", 16, 1, 1)))
    y = make(Op.ADD, make(Op.CONV2D, y, p("wb", 16, 16, 3, 3), pads=(1, 1, 1, 1), label="b"),
             p("bb", 1, 16, 1, 1))
    y = make(Op.RELU, make(Op.ADD, y, x))
    y = make(Op.CONV2D, y, p("wc", 8, 16, 1, 1), label="c")
    return Graph((x,), (make(Op.MAX_POOL, y, kernel=(2, 2), strides=(2, 2)),), ("y",)), vals


def test_sites_and_edges_of_a_residual_block():
    g, _ = residual_net()
    ls = layout_sites(g)
    assert [s.node.label for s in ls.sites] == ["a", "b", "c"]
    assert ls.sites[0].candidates == ((0, 0), (0, 16), (0, 8), (16, 16), (16, 8), (8, 16), (8, 8))
    assert ls.sites[2].candidates == ((0, 0), (0, 8), (16, 8), (8, 8))
    # x feeds a's input and b's add (b owns the add: its out layout); b's region feeds c
    # and c's region the pool (NCHW)
    assert sorted((e.src, e.dst, e.port) for e in ls.edges) == \
        [(-1, 0, "in"), (-1, 1, "out"), (0, 1, "in"), (1, 2, "in"), (2, -1, "in")]


@pytest.mark.parametrize("choice", [((0, 0), (0, 0), (0, 0)), ((16, 16), (16, 16), (16, 8)),
                                    ((8, 16), (16, 8), (0, 0)), ((0, 0), (16, 8), (8, 8)),
                                    ((0, 16), (16, 16), (0, 8))])
def test_every_choice_computes_the_same_outputs_with_the_implied_transforms(choice):
    g, vals = residual_net()
    ls = layout_sites(g)
    g2, p2 = assign_layout(g, vals, lambda sites: choice)
    g2, p2 = eliminate_dead_code(*fold_constants(g2, p2))
    verify(g2, p2)
    moves = sorted((n.attr("src_layout"), n.attr("dst_layout")) for n in g2.nodes()
                   if n.op is Op.LAYOUT_TRANSFORM)
    assert moves == sorted((a, b) for _, a, b in ls.transforms(choice))
    x = R.standard_normal((1, 16, 6, 6)).astype(np.float32)
    np.testing.assert_allclose(run(g2, p2, {"x": x})[0], run(g, vals, {"x": x})[0],
                               rtol=1e-5, atol=1e-5)


def test_the_plain_choice_changes_nothing_and_bad_choices_are_named():
    g, vals = residual_net()
    assert assign_layout(g, vals, lambda s: [(0, 0)] * 3)[0] == g
    assert assign_layout(g, vals, lambda s: None)[0] is g
    with pytest.raises(GraphError, match=r"choice \(4, 4\) of conv site 1 \(b\) is not one of"):
        assign_layout(g, vals, lambda s: [(0, 0), (4, 4), (0, 0)])
    with pytest.raises(GraphError, match="has 2 entries, the graph has 3 conv sites"):
        assign_layout(g, vals, lambda s: [(0, 0)] * 2)


def test_transform_count_is_one_per_tensor_and_layout():
    g, _ = residual_net()
    ls = layout_sites(g)
    every = itertools.product(*(s.candidates for s in ls.sites))
    counts = {c: len(ls.transforms(c)) for c in every}
    assert counts[((0, 0),) * 3] == 0
    # x to NCHW16c once, shared by a's input and b's add; c's output back to NCHW
    assert counts[((16, 16), (16, 16), (16, 8))] == 2


def test_the_report_counts_every_conv_that_reads_or_writes_a_blocked_layout():
    assert describe_layouts([(0, 8), (8, 16)]) == \
        "2 of 2 convs blocked (NCHW->NCHW8c, NCHW8c->NCHW16c)"
    assert describe_layouts([(0, 0), (8, 8), (8, 8), (0, 0)]) == \
        "2 of 4 convs blocked (NCHW->NCHW, NCHW8c->NCHW8c x2, NCHW->NCHW)"
    assert describe_layouts([[0, 0]]) == "0 of 1 conv blocked (NCHW->NCHW)"
    # a choice that implies a transform has a blocked conv, and the report says so
    ls = layout_sites(residual_net()[0])
    for c in itertools.product(*(s.candidates for s in ls.sites)):
        blocked = int(describe_layouts(c).split()[0])
        assert (blocked == 0) == (len(ls.transforms(c)) == 0), (c, describe_layouts(c))


def inverted_residual():
    """MobileNetV2's block: 1x1 expand 16 -> 32 (+b, clip), 3x3 depthwise (+b, clip),
    1x1 project 32 -> 16, + x."""
    vals = {}

    def p(name, *shape):
        vals[name] = R.standard_normal(shape).astype(np.float32) * 0.2
        return param_node(name, vals[name])
    x = input_node("x", (1, 16, 6, 6))
    y = make(Op.CLIP, make(Op.ADD, make(Op.CONV2D, x, p("we", 32, 16, 1, 1), label="e"),
                           p("be", 32, 1, 1)), min=0.0, max=6.0)
    y = make(Op.CLIP, make(Op.ADD, make(Op.CONV2D, y, p("wd", 32, 1, 3, 3), pads=(1, 1, 1, 1),
                                        groups=32, label="d"), p("bd", 32, 1, 1)), min=0.0, max=6.0)
    y = make(Op.ADD, make(Op.CONV2D, y, p("wp", 16, 32, 1, 1), label="p"), x)
    return Graph((x,), (y,), ("y",)), vals


def test_a_depthwise_conv_is_a_site_that_keeps_its_block():
    g, vals = inverted_residual()
    ls = layout_sites(g)
    assert [s.node.label for s in ls.sites] == ["e", "d", "p"]
    assert ls.sites[1].candidates == ((0, 0), (16, 16), (8, 8))
    # blocked throughout: x in and the sum out, nothing between the convs
    choice = ((16, 16), (16, 16), (16, 16))
    assert len(ls.transforms(choice)) == 2
    g2, p2 = assign_layout(g, vals, lambda sites: choice)
    g2, p2 = eliminate_dead_code(*fold_constants(g2, p2))
    verify(g2, p2)
    d = next(n for n in g2.nodes() if n.op is Op.CONV2D and n.label == "d")
    assert (d.attr("data_layout"), d.attr("kernel_layout")) == ("NCHW16c", "OIHW16o")
    assert d.src[1].shape == (2, 1, 3, 3, 16)
    x = R.standard_normal((1, 16, 6, 6)).astype(np.float32)
    np.testing.assert_allclose(run(g2, p2, {"x": x})[0], run(g, vals, {"x": x})[0],
                               rtol=1e-5, atol=1e-5)
