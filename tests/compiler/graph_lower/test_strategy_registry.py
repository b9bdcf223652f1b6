"""The operator strategy registry: registering, conditions, selection, the no-implementation error."""
from __future__ import annotations

import pytest

from compiler.codegen.llvm.target import Target
from compiler.graph import Op, input_node, make
from compiler.graph.ops import LEAVES
from compiler.graph_lower.master import MasterKind
from compiler.graph_lower.strategy import (Implementation, LoweringError, Registry, Workload, attr_is,
                                           cpu_features, default_registry, target_arch)

X86 = Target("x86_64-unknown-linux-gnu", "znver4", "+avx2,+fma,+avx512f", False)
ARM = Target("aarch64-unknown-linux-gnu", "generic", "+neon", False)


def _compute(b, n, a, cfg):
    return a[0], None


def _relu(**attrs):
    return make(Op.RELU, input_node("x", (2, 8)), label="r1", **attrs)


def test_register_keeps_the_order_and_refuses_a_duplicate_name():
    r = Registry()
    r.register(Op.RELU, "a")(_compute)
    r.register(Op.RELU, "b", plevel=5)(_compute)
    assert [i.name for i in r.implementations(Op.RELU)] == ["a", "b"]
    assert r.implementations(Op.TANH) == ()
    with pytest.raises(ValueError, match="RELU already has an implementation named 'a'"):
        r.register(Op.RELU, "a")(_compute)


def test_select_takes_the_applicable_one_of_highest_plevel_first_on_a_tie():
    r = Registry()
    r.add(Implementation(Op.RELU, "generic", _compute))
    r.add(Implementation(Op.RELU, "same_level", _compute))
    r.add(Implementation(Op.RELU, "avx512", _compute, when=(cpu_features("+avx512f"),), plevel=20))
    r.add(Implementation(Op.RELU, "vnni", _compute, when=(cpu_features("+avx512vnni"),), plevel=30))
    assert r.select(Workload(_relu(), X86)).name == "avx512"
    assert r.select(Workload(_relu(), ARM)).name == "generic"


def test_conditions_say_why_not():
    w = Workload(make(Op.CONV2D, input_node("x", (1, 4, 6, 6)), input_node("w", (8, 2, 3, 3)),
                      groups=2), ARM)
    assert attr_is("groups", 2, 1)(w) is None
    assert attr_is("groups", 1, 1)(w) == "groups is 2, needs 1"
    assert attr_is("data_layout", "NCHW", "NCHW")(w) is None
    assert target_arch("aarch64")(w) is None
    assert target_arch("x86_64")(w) == "target architecture aarch64 is not one of ['x86_64']"
    assert cpu_features("+neon")(w) is None
    assert cpu_features("+neon", "+sve", "+i8mm")(w) == "target lacks +sve, +i8mm"


def test_no_applicable_implementation_names_the_op_the_node_and_every_reason():
    r = Registry()
    r.add(Implementation(Op.RELU, "vnni", _compute, when=(cpu_features("+avx512vnni"),)))
    r.add(Implementation(Op.RELU, "arm", _compute, when=(target_arch("aarch64"), attr_is("fast", True))))
    with pytest.raises(LoweringError) as err:
        r.select(Workload(_relu(), X86))
    msg = str(err.value)
    assert msg.startswith("no implementation of RELU applies to node 'r1' on target llvm "
                          "-mtriple=x86_64-unknown-linux-gnu -mcpu=znver4 -mattr=+avx2,+fma,+avx512f: ")
    assert ("vnni: target lacks +avx512vnni | arm: target architecture x86_64 is not one of "
            "['aarch64']; fast is None, needs True") in msg


def test_an_op_without_implementations_is_a_lowering_error():
    with pytest.raises(LoweringError) as err:
        Registry().select(Workload(_relu(), X86))
    assert str(err.value) == ("operator RELU has no CPU lowering (node 'r1'); register an "
                              "implementation in compiler/graph_lower/impls/")


def test_every_graph_op_has_an_implementation():
    r = default_registry()
    missing = [op.name for op in Op if op not in LEAVES | {Op.FUSED} and not r.implementations(op)]
    assert missing == []


def _conv(x_shape, w_shape, **attrs):
    return make(Op.CONV2D, input_node("x", x_shape), input_node("w", w_shape), **attrs)


@pytest.mark.parametrize("node,name,kind", [
    (_conv((1, 8, 6, 6), (16, 8, 3, 3)), "conv2d_nchw", MasterKind.CONV2D),
    (_conv((1, 8, 6, 6), (8, 1, 3, 3), groups=8), "depthwise_conv2d_nchw", MasterKind.DEPTHWISE_CONV2D),
    (_conv((1, 8, 6, 6), (8, 4, 3, 3), groups=2), "group_conv2d_nchw", MasterKind.GROUP_CONV2D),
    (_conv((1, 1, 6, 6, 16), (2, 1, 3, 3, 16, 16), data_layout="NCHW16c",
           kernel_layout="OIHW16i16o"), "conv2d_nchwc", MasterKind.CONV2D_NCHWC),
    (make(Op.CONV2D_TRANSPOSE, input_node("x", (1, 8, 6, 6)), input_node("w", (8, 1, 3, 3)), groups=8),
     "conv2d_transpose_nchw", MasterKind.CONV2D_TRANSPOSE),
    (make(Op.MATMUL, input_node("a", (2, 4, 8)), input_node("b", (8, 16))), "batch_matmul",
     MasterKind.BATCH_MATMUL),
    (make(Op.MAX_POOL, input_node("x", (1, 8, 6, 6)), kernel=(2, 2)), "pool2d_nchw", MasterKind.POOL),
])
def test_the_default_registry_selects(node, name, kind):
    impl = default_registry().select(Workload(node, X86))
    assert (impl.name, impl.kind) == (name, kind)


def test_matmul_by_a_constant_input_selects_the_dense_kernel():
    b = input_node("p1", (8, 16))
    node = make(Op.MATMUL, input_node("p0", (2, 4, 8)), b)
    assert default_registry().select(Workload(node, X86, (b,))).name == "matmul_dense"
    assert default_registry().select(Workload(node, X86)).name == "batch_matmul"


def test_a_blocked_grouped_conv_has_no_implementation_and_says_why():
    node = _conv((1, 2, 6, 6, 16), (2, 1, 3, 3, 16, 16), data_layout="NCHW16c",
                 kernel_layout="OIHW16i16o", groups=2)
    with pytest.raises(LoweringError) as err:
        default_registry().select(Workload(node, X86))
    msg = str(err.value)
    assert msg.startswith("no implementation of CONV2D applies to node CONV2D(")
    for reason in ("conv2d_nchw: data_layout is 'NCHW16c', needs 'NCHW'; groups is 2, needs 1",
                   "conv2d_nchwc: groups is 2, needs 1",
                   "depthwise_conv2d_nchw: data_layout is 'NCHW16c', needs 'NCHW'"):
        assert reason in msg


def test_conv_transpose_and_depthwise_have_distinct_kinds_and_schedule_entries():
    r = default_registry()
    (convt,) = r.implementations(Op.CONV2D_TRANSPOSE)
    dw = next(i for i in r.implementations(Op.CONV2D) if i.name == "depthwise_conv2d_nchw")
    assert convt.kind is MasterKind.CONV2D_TRANSPOSE and dw.kind is MasterKind.DEPTHWISE_CONV2D
    assert convt.schedule is not dw.schedule
