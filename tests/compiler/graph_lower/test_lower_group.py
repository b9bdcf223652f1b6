"""lower_group per master kind: the kernel builds and matches the numpy reference of its body."""
from __future__ import annotations

import dataclasses

import pytest

from compiler.codegen.llvm.target import host_target
from compiler.graph import Op, make
from compiler.graph_lower import lower_group
from compiler.graph_lower.master import MasterKind
from compiler.graph_lower.space import ConfigSpace, Knob
from compiler.graph_lower.strategy import REGISTRY, Implementation, Workload, target_arch
from lowering_cases import Model, run_group


def _conv_relu(m, x_shape=(1, 8, 9, 11), o=16, **attrs):
    x = m.input("x", x_shape)
    w = m.param("w", (o, x_shape[1] // attrs.get("groups", 1), 3, 3))
    b = m.param("b", (o, 1, 1))
    return make(Op.RELU, make(Op.ADD, make(Op.CONV2D, x, w, pads=(1, 1, 1, 1), **attrs), b))


def test_conv2d_packs_its_constant_weight_and_fuses_bias_relu():
    m = Model()
    kdef = run_group(*m.group(_conv_relu(m)))
    assert kdef.master.kind is MasterKind.CONV2D
    assert kdef.packs == [None, "conv:16", None]       # O=16: one AVX-512 vector of channels


def test_conv2d_with_a_computed_weight_packs_it_in_the_kernel():
    m = Model()
    x = m.input("x", (1, 4, 6, 6))
    w = m.input("w", (8, 4, 3, 3))
    kdef = run_group(*m.group(make(Op.RELU, make(Op.CONV2D, x, w))))
    assert kdef.packs == [None, None]
    assert any(t.name.startswith("wpack") for t in kdef.workspace)


def test_conv2d_then_flatten_runs_the_master_at_the_root():
    m = Model()
    kdef = run_group(*m.group(make(Op.RESHAPE, _conv_relu(m, o=8), newshape=(1, 792))))
    assert kdef.master.kind is MasterKind.CONV2D
    assert any(t.name.startswith("epi") for t in kdef.workspace)


def test_blocked_conv2d_nchwc():
    m = Model()
    groups, params = m.groups(_conv_relu(m, x_shape=(1, 16, 6, 6), o=32), layout_block=16)
    kinds = {}
    for g in groups:
        kdef = run_group(g, params)
        kinds[kdef.master.kind if kdef.master else None] = kdef
    assert MasterKind.CONV2D_NCHWC in kinds


@pytest.mark.parametrize("groups,kind", [(8, MasterKind.DEPTHWISE_CONV2D), (2, MasterKind.GROUP_CONV2D)])
def test_depthwise_and_grouped_conv2d(groups, kind):
    m = Model()
    x = m.input("x", (1, 8, 10, 7))
    w = m.param("w", (8, 8 // groups, 3, 3))
    y = make(Op.CLIP, make(Op.CONV2D, x, w, strides=(2, 2), pads=(1, 1, 1, 1), groups=groups),
             min=0.0, max=6.0)
    assert run_group(*m.group(y)).master.kind is kind


def test_conv2d_transpose():
    m = Model()
    x = m.input("x", (1, 4, 5, 5))
    w = m.param("w", (4, 3, 3, 3))
    y = make(Op.CONV2D_TRANSPOSE, x, w, strides=(2, 2), pads=(1, 1, 1, 1), output_padding=(1, 1))
    assert run_group(*m.group(make(Op.RELU, y))).master.kind is MasterKind.CONV2D_TRANSPOSE


@pytest.mark.parametrize("op,attrs", [(Op.MAX_POOL, {}), (Op.AVG_POOL, {"count_include_pad": 0})])
def test_pooling(op, attrs):
    m = Model()
    x = m.input("x", (1, 3, 9, 9))
    y = make(op, x, kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1), **attrs)
    assert run_group(*m.group(y)).master.kind is MasterKind.POOL


def test_dense_with_bias():
    m = Model()
    x = m.input("x", (3, 32))
    y = make(Op.ADD, make(Op.DENSE, x, m.param("w", (24, 32))), m.param("b", (24,)))
    kdef = run_group(*m.group(y))
    assert kdef.master.kind is MasterKind.DENSE and kdef.packs[1] == "dense:8"


def test_matmul_by_a_constant_is_a_dense_kernel():
    m = Model()
    x = m.input("x", (2, 3, 16))
    kdef = run_group(*m.group(make(Op.MATMUL, x, m.param("w", (16, 32)))))
    assert kdef.master.kind is MasterKind.DENSE and kdef.packs[1] == "dense_t:16"


def test_matmul_of_two_activations_is_a_batch_matmul():
    m = Model()
    a, b = m.input("a", (2, 5, 8)), m.input("b", (1, 8, 12))
    assert run_group(*m.group(make(Op.MATMUL, a, b))).master.kind is MasterKind.BATCH_MATMUL


@pytest.mark.parametrize("op,extra,attrs", [
    (Op.SOFTMAX, lambda m: (), {"axis": 1}),
    (Op.GLOBAL_AVG_POOL, lambda m: (), {}),
    (Op.REDUCE_MEAN, lambda m: (), {"axes": (1,), "keepdims": 0}),
    (Op.LAYER_NORM, lambda m: (m.param("g", (5,)), m.param("b", (5,))), {"axis": 3, "epsilon": 1e-5}),
])
def test_reductions(op, extra, attrs):
    m = Model()
    x = m.input("x", (2, 6, 4, 5))
    assert run_group(*m.group(make(op, x, *extra(m), **attrs))).master.kind is MasterKind.REDUCTION


def test_injective_group_has_no_master():
    m = Model()
    x = m.input("x", (2, 3, 4))
    y = make(Op.TRANSPOSE, make(Op.SIGMOID, make(Op.MUL, x, m.param("s", (4,)))), perm=(2, 0, 1))
    assert run_group(*m.group(y)).master is None


def test_a_config_point_changes_the_packing_and_tiles():
    m = Model()
    node, params = m.group(_conv_relu(m))
    impl = REGISTRY.implementations(Op.CONV2D)[0]
    space = impl.space(_workload_of(node, impl))
    kdef = run_group(node, params, config=space.point(conv_out_block=8, ow_tile=7))
    assert kdef.packs == [None, "conv:8", None]


def test_a_config_for_a_group_without_master_is_refused():
    m = Model()
    node, _ = m.group(make(Op.RELU, m.input("x", (4,))))
    with pytest.raises(ValueError, match="has no master op"):
        lower_group(node, "k", config=ConfigSpace((Knob("ow_tile", (7, 14), 14),)).default)


def test_the_target_reaches_the_conditions(monkeypatch):
    """An implementation conditioned on aarch64 is chosen for an aarch64 target only."""
    seen = []
    relu = REGISTRY.implementations(Op.RELU)[0]

    def compute(b, n, a, cfg):
        seen.append(n.op)
        return relu.compute(b, n, a, cfg)
    arm = Implementation(Op.RELU, "relu_arm", compute, when=(target_arch("aarch64"),), plevel=20)
    monkeypatch.setitem(REGISTRY.impls, Op.RELU, [arm, relu])
    m = Model()
    node, _ = m.group(make(Op.RELU, m.input("x", (4,))))
    lower_group(node, "k")
    assert seen == [] and host_target().arch != "aarch64"
    lower_group(node, "k", target="llvm -mtriple=aarch64-linux-gnu")
    assert seen == [Op.RELU]


def test_conv_transpose_does_not_use_the_depthwise_schedule_entry(monkeypatch):
    """Changing the depthwise entry's schedule leaves ConvTranspose's kernel alone."""
    called = []
    impls = list(REGISTRY.implementations(Op.CONV2D))
    i = next(k for k, impl in enumerate(impls) if impl.kind is MasterKind.DEPTHWISE_CONV2D)
    impls[i] = dataclasses.replace(impls[i], schedule=lambda s, acc, out, cfg: called.append(acc))
    monkeypatch.setitem(REGISTRY.impls, Op.CONV2D, impls)
    m = Model()
    x = m.input("x", (1, 4, 5, 5))
    lower_group(m.group(make(Op.CONV2D, x, m.param("wd", (4, 1, 3, 3)), groups=4))[0], "k")
    assert len(called) == 1                          # the patched entry is in use
    m = Model()
    x = m.input("x", (1, 4, 5, 5))
    y = make(Op.CONV2D_TRANSPOSE, x, m.param("w", (4, 1, 3, 3)), strides=(2, 2), groups=4)
    run_group(*m.group(y))
    assert len(called) == 1


def _workload_of(node, impl):
    body = node.attr("body")
    n = next(n for n in body.nodes() if n.op is impl.op)
    consts = tuple(i for i, s in zip(body.inputs, node.src) if s.op is Op.PARAM)
    return Workload(n, host_target(), consts)
