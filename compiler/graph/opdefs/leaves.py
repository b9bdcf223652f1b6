"""INPUT, PARAM and FUSED: nodes whose shape is given, not inferred."""

from __future__ import annotations

from ..errors import GraphError
from ..ops import Kind, Op
from ..registry import register


def _no_compute(args, attrs):
    raise GraphError("leaves and fused groups are evaluated by compiler.graph.reference, not by compute()")


@register(Op.INPUT, Kind.OPAQUE, 0)
def _input():
    def infer(src, a):
        raise GraphError("build INPUT nodes with compiler.graph.ir.input_node")
    return infer, _no_compute


@register(Op.PARAM, Kind.OPAQUE, 0)
def _param():
    def infer(src, a):
        raise GraphError("build PARAM nodes with compiler.graph.ir.param_node")
    return infer, _no_compute


@register(Op.FUSED, Kind.OPAQUE, (0, 1 << 16))
def _fused():
    def infer(src, a):
        body = a["body"]
        if len(body.inputs) != len(src):
            raise GraphError(f"fused body takes {len(body.inputs)} inputs, got {len(src)}")
        for p, s in zip(body.inputs, src):
            if (p.shape, p.dtype) != (s.shape, s.dtype):
                raise GraphError(f"fused body input {p.name!r} is {p.dtype}{list(p.shape)}, "
                                 f"given {s.dtype}{list(s.shape)}")
        out = body.outputs[0]
        return out.shape, out.dtype
    return infer, _no_compute
