"""Which kernel builds each CPU step of a quantized graph: :data:`CPU_KERNELS` (one builder
per ``QOp``) and, for int8 CONV2D and DENSE, :data:`INT8_PATHS` (the implementations, highest
priority first, each applicable where the target has its CPU features: ``amx``, ``vnni512``,
``vnni256``, ``plain``), chosen by :func:`select`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from compiler.graph_lower.lower import KernelDef

from ..qgraph import QNode, QOp
from . import amx, generic, vnni
from .generic import (add, dequantize, depthwise, graph_op_kernel, lut, mean, quantize,
                      rescale_add, _graph_body)
from .pool import maxpool

@dataclass(frozen=True)
class Int8Path:
    """One CPU int8 implementation: its name, the LLVM features it needs (all of them), its
    conv2d and dense builders (``(node, x_shape, weight, bias, name=) -> KernelDef``)."""

    name: str
    features: tuple[str, ...]
    conv2d: Callable
    dense: Callable

    def why_not(self, features: str) -> "str | None":
        missing = [f for f in self.features if f not in set(features.split(","))]
        return f"target lacks {', '.join(missing)}" if missing else None


def _vnni(lanes: int, name: str, features: tuple[str, ...]) -> Int8Path:
    return Int8Path(name, features,
                    lambda *a, name="conv2d": vnni.conv2d(*a, lanes=lanes, name=name),
                    lambda *a, name="dense": vnni.dense(*a, lanes=lanes, name=name))


#: CPU int8 paths, highest priority first; the last, plain widening, applies everywhere
INT8_PATHS: tuple = (
    Int8Path("amx", ("+amx-int8", "+amx-tile", "+avx512vnni", "+avx512f"), amx.conv2d,
             lambda *a, name="dense": vnni.dense(*a, lanes=16, name=name)),
    _vnni(16, "vnni512", ("+avx512vnni", "+avx512f")),
    _vnni(8, "vnni256", ("+avxvnni",)),
    Int8Path("plain", (), generic.conv2d, generic.dense),
)


def select(features: str) -> Int8Path:
    """The first path of :data:`INT8_PATHS` whose features the LLVM feature string
    ``features`` (``Target.features``) has."""
    return next(p for p in INT8_PATHS if p.why_not(features) is None)


def _int8_gemm(node: QNode, src_nodes, params, name: str, target) -> KernelDef:
    """CONV2D / DENSE on the int8 path the target's CPU features allow (:func:`select`)."""
    from compiler.codegen.llvm.target import parse_target
    path = select(parse_target(target or "llvm").features)
    build = path.conv2d if node.op is QOp.CONV2D else path.dense
    return build(node, src_nodes[0].shape, *(params[p] for p in node.params), name=name)


def _int8_maxpool(node: QNode, src_nodes, name: str) -> KernelDef:
    _graph_body(node, src_nodes)    # the shape check
    return maxpool(node, src_nodes[0].shape, src_nodes[0].dtype, name=name)


#: graph op name -> builder ``(node, src_nodes, name) -> KernelDef`` of an INT8 graph op
#: with a kernel of its own (the rest go through the graph lowering)
INT8_GRAPH_KERNELS = {"MAX_POOL": _int8_maxpool}


def _graph_op(node: QNode, src_nodes, params, name: str, target) -> KernelDef:
    if node.attrs["op"] == "PARAM":
        raise ValueError(f"node {node.name!r} ({node.op.value}) has no CPU kernel: a PARAM is a "
                         "constant, stored with the module's params")
    own = INT8_GRAPH_KERNELS.get(node.attrs["op"]) if node.op is QOp.INT8 else None
    if own is not None:
        return own(node, src_nodes, name)
    return graph_op_kernel(node, src_nodes, name, target)


#: QOp -> builder ``(node, src_nodes, params, name, target) -> KernelDef`` of its CPU step
CPU_KERNELS = {
    QOp.QUANTIZE: lambda n, srcs, params, name, target: quantize(n.shape, n.exp, name, n.zp),
    QOp.DEQUANTIZE: lambda n, srcs, params, name, target: dequantize(
        n.shape, n.attrs["src_exp"], name, n.attrs.get("src_zp", 0)),
    QOp.CONV2D: _int8_gemm,
    QOp.DENSE: _int8_gemm,
    QOp.ADD: lambda n, srcs, params, name, target: add(n, name),
    QOp.LUT: lambda n, srcs, params, name, target: lut(n, name),
    QOp.DEPTHWISE: lambda n, srcs, params, name, target: depthwise(
        n, srcs[0].shape, *(params[p] for p in n.params), name=name),
    QOp.RESCALE_ADD: lambda n, srcs, params, name, target: rescale_add(n, name),
    QOp.MEAN: lambda n, srcs, params, name, target: mean(n, srcs[0].shape, name),
    QOp.INT8: _graph_op,
    QOp.FLOAT: _graph_op,
}


def cpu_kernel(node: QNode, src_nodes: list[QNode], params, name: str, target=None) -> KernelDef:
    """The kernel of a ``cpu`` step (:data:`CPU_KERNELS`): node ``node`` reading values of
    ``src_nodes``; graph ops are lowered for LLVM ``target`` (default: this machine), int8
    CONV2D and DENSE on the path its CPU features allow (:func:`select`: AMX, VNNI, else
    plain widening).

    Raises:
        ValueError: an op without a kernel here (INPUT; FLOAT PARAM is a constant, no kernel).
    """
    build = CPU_KERNELS.get(node.op)
    if build is None:
        raise ValueError(f"node {node.name!r} ({node.op.value}) has no CPU kernel; ops with one: "
                         f"{', '.join(op.value for op in CPU_KERNELS)}")
    return build(node, src_nodes, params, name, target)
