"""The bf16 accuracy rule (compiler.graph_lower.bf16_accuracy): the shortest prefix of
bf16-able layers kept fp32 so that the emulated output meets cosine 0.999; mark_bf16 leaves
those nodes unmarked; the reference executor's args_hook that the emulation rides on."""
import numpy as np
import pytest

from compiler.build_model import import_model
from compiler.graph import Op, optimize, reference
from compiler.graph_lower import bf16_accuracy as acc
from compiler.graph_lower.bf16 import mark_bf16
from tests.models import builders


@pytest.fixture(scope="module")
def mobilenet():
    """MobileNetV2 (seeded random weights, 32 x 32) with batch norm folded, as a bf16 build
    chooses on it."""
    folded = optimize(*import_model(builders.build_mobilenet_v2(32)), fuse=False)
    return folded.graph, folded.params


def test_candidates_skip_depthwise_and_keep_order(mobilenet):
    graph, _ = mobilenet
    cands = acc.candidates(graph)
    order = {n: i for i, n in enumerate(graph.nodes())}
    assert [order[n] for n in cands] == sorted(order[n] for n in cands)
    convs = [n for n in graph.nodes() if n.op is Op.CONV2D]
    # MobileNetV2: 17 depthwise convs of 52, plus the classifier's dense layer
    assert len(cands) == len(convs) - 17 + 1
    assert all(n.attr("groups", 1) == 1 for n in cands if n.op is Op.CONV2D)


def test_choose_keeps_the_shortest_prefix_meeting_the_bar(mobilenet):
    graph, params = mobilenet
    plan = acc.choose(graph, params)
    inputs = acc.seeded_inputs(graph)
    want = reference.run(graph, params, inputs)

    def cos(k):
        return acc.cosine(acc.emulate(graph, params, inputs, set(plan.candidates[k:])), want)
    # the emulation aims at half the allowed loss: 0.9995; all in bf16 this random-weight
    # MobileNetV2 misses it, so the plan keeps a prefix fp32
    assert plan.target == pytest.approx(1 - acc.MARGIN * (1 - acc.MIN_COSINE)) == 0.9995
    assert cos(0) < plan.target
    assert 0 < plan.n_fp32 < len(plan.candidates) // 2
    assert plan.cosine == pytest.approx(cos(plan.n_fp32)) and plan.cosine >= plan.target
    assert cos(plan.n_fp32 - 1) < plan.target                           # shortest
    st = plan.stats()
    assert st["fp32_prefix"] == plan.n_fp32 and len(st["fp32_layers"]) == plan.n_fp32


def test_choose_keeps_nothing_when_all_bf16_meets_the_bar(mobilenet):
    graph, params = mobilenet
    plan = acc.choose(graph, params, min_cosine=0.99)
    assert plan.n_fp32 == 0 and plan.keep_fp32 == () and plan.cosine >= plan.target == 0.995


def test_choose_rejects_a_bar_outside_0_1(mobilenet):
    with pytest.raises(ValueError, match=r"min_cosine must be in \(0, 1\], not 1\.5"):
        acc.choose(*mobilenet, min_cosine=1.5)
    with pytest.raises(ValueError, match=r"margin must be in \(0, 1\], not 0"):
        acc.choose(*mobilenet, margin=0)


def test_mark_bf16_leaves_kept_nodes_fp32(mobilenet):
    graph, params = mobilenet
    cands = acc.candidates(graph)
    marked = mark_bf16(graph, cands[:3])
    dtypes = [n.attr("compute_dtype") for n in acc.candidates(marked)]
    assert dtypes == [None] * 3 + ["bfloat16"] * (len(cands) - 3)
    # depthwise convs are marked too (their strategy then keeps fp32 kernels)
    assert mark_bf16(graph).nodes() and all(
        n.attr("compute_dtype") == "bfloat16" for n in mark_bf16(graph).nodes()
        if n.op in (Op.CONV2D, Op.DENSE))


def test_reference_args_hook_sees_and_replaces_inputs(mobilenet):
    graph, params = mobilenet
    shape, name = graph.inputs[0].shape, graph.inputs[0].name
    rng = np.random.default_rng(3)
    xs = [{name: rng.standard_normal(shape).astype(np.float32)} for _ in range(2)]
    seen = []

    def zero_dense(node, args):
        seen.append(node.op)
        return [np.zeros_like(args[0])] + args[1:] if node.op is Op.DENSE else args
    hooked = [reference.run(graph, params, x, args_hook=zero_dense)[0] for x in xs]
    plain = [reference.run(graph, params, x)[0] for x in xs]
    assert Op.CONV2D in seen and Op.DENSE in seen and Op.PARAM not in seen
    # the classifier read zeros: its output no longer depends on the input
    np.testing.assert_array_equal(hooked[0], hooked[1])
    assert np.abs(plain[0] - plain[1]).max() > 1e-3 and np.abs(hooked[0] - plain[0]).max() > 1e-3
