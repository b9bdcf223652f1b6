"""Float graph -> ``QGraph``: calibration and int8 quantization with power-of-two scales.

Pipeline (``quantize``), each step one function::

    prepare        infer_types, fold_constants, fold_batch_norm, eliminate_dead_code
                   (``compiler.graph.optimize`` without fusion): batch norm is folded into
                   the conv weights and a bias add before anything is quantized
    calibrate      run the float graph (``compiler.graph.run``) on sample inputs and record
                   every tensor's largest magnitude
    quantize       walk the graph in order and emit ``QNode``s (``qgraph`` docstring)

Scales are symmetric, per tensor and powers of two, as in VTA's quantizer
(TVM ``relay.quantize`` with power-of-two scales): a tensor of largest magnitude
``m`` gets exponent ``e = floor(log2(127 / m))`` (real = q * 2**-e). Weights get
their own exponent the same way; a conv's int32 accumulator then has exponent
``ex + ew`` and is requantized to the output's exponent ``ey`` by an arithmetic
right shift of ``ex + ew - ey`` (0..31), which the accelerator's ALU does (SHR).
The bias is quantized at the accumulator's exponent, with ``2**(shift-1)`` added
so that the shift rounds to nearest instead of down. With ``per_channel=True``
each output channel ``o`` of a conv/dense weight gets its own exponent ``ew[o]``
(from that channel's largest magnitude), hence its own accumulator exponent and
shift: the ALU shifts by a vector, one shift per lane (``conv2d_program`` with a
tuple ``shift``).

Patterns fused into one accelerator-able node: conv2d [+ per-channel bias add]
[+ relu], dense [+ bias add] [+ relu] (activations of rank > 2, a transformer's
[batch, seq, hidden], are reshaped to 2-D around it, on int8), residual add [+ relu] (integer ADD: both
operands shifted left to the larger exponent, summed, rounded and shifted right to
the output's). Global average pooling becomes MEAN; data movement (reshape,
transpose, slice, max pool, relu, nearest resize, and concat of inputs at one
exponent) runs on the int8 values; any other op runs in float on the CPU between a
DEQUANTIZE and a QUANTIZE. Integer and bool graph inputs (token ids, attention masks)
keep their dtype, and an op that reads integer or bool values runs on the CPU in the
graph's dtypes, never quantized (an embedding Gather on int64 ids, a mask's Cast).
"""
from __future__ import annotations

import math
from typing import Mapping

import numpy as np

from compiler.graph import Graph, Node, Op, optimize
from compiler.graph import run as run_float

from .qgraph import QGraph, QNode, QOp, quantize_array
from vta_hw.errors import VtaError

#: graph ops that only move or select values: exact on int8, same exponent (RESIZE in
#: nearest mode only; CONCAT when its inputs share one exponent, ``_Builder.concat_int8``)
INT8_OPS = {Op.RESHAPE, Op.TRANSPOSE, Op.MAX_POOL, Op.RELU, Op.SLICE, Op.RESIZE}
EXP_MIN, EXP_MAX = -20, 30

#: graph ops the quantizer maps onto the accelerator (GEMM core and ALU): op -> (the
#: ``_Builder`` method that emits the node when its conditions hold, the conditions; the
#: partition then keeps a conv/dense with fewer than ``min_channels`` inputs on the CPU)
ACCELERATED = {
    Op.CONV2D: ("conv_node", "int8 GEMM + bias + requantize (shift) + relu/clip; constant weight, dilation 1, "
                             "symmetric pads up to 15, at least BLOCK_IN/4 input channels; grouped: one conv "
                             "per group when groups have at least BLOCK_IN input channels"),
    Op.DENSE: ("dense_node", "as CONV2D, on activations [..., K] (flattened to 2-D) with a constant weight [O, K]"),
    Op.ADD: ("residual_add", "two int8 activations of one shape (2-D, 3-D as rows, or 4-D), [+ relu]; shifts 0 to 31"),
}


class QuantizeError(VtaError, ValueError):
    """The graph cannot be quantized (message names the node and the reason)."""


def exponent_for(maxabs: float) -> int:
    """The power-of-two exponent e with maxabs * 2**e <= 127 (largest such; 7 for zeros)."""
    if not np.isfinite(maxabs):
        raise QuantizeError(f"calibration saw a non-finite value ({maxabs}); check the inputs")
    if maxabs <= 0:
        return 7
    return int(min(EXP_MAX, max(EXP_MIN, math.floor(math.log2(127.0 / maxabs)))))


def prepare(graph: Graph, params: Mapping[str, np.ndarray]) -> tuple[Graph, dict]:
    """Constant folding and batch-norm folding, no fusion (``compiler.graph.optimize``)."""
    opt = optimize(graph, params, fuse=False)
    return opt.graph, opt.params


def _batches(graph: Graph, calib: Mapping[str, np.ndarray]):
    """Split sample arrays (any leading count) into batches of the graph's input shapes."""
    names = [i.name for i in graph.inputs]
    missing = [n for n in names if n not in calib]
    if missing:
        raise QuantizeError(f"calibration data lacks inputs {missing}; it has {sorted(calib)}")
    shapes = {i.name: i.shape for i in graph.inputs}
    dtypes = {i.name: i.dtype for i in graph.inputs}
    count = None
    per = {}
    for n in names:
        a = np.asarray(calib[n]).astype(dtypes[n], copy=False)
        s = shapes[n]
        a = a.reshape((-1,) + tuple(s[1:]))
        per[n] = a
        count = a.shape[0] if count is None else min(count, a.shape[0])
    b = shapes[names[0]][0]
    for k in range(0, count, b):
        idx = np.arange(k, k + b) % count  # the last batch wraps around to real samples
        yield {n: per[n][idx] for n in names}


def calibrate(graph: Graph, params: Mapping[str, np.ndarray],
              calib: Mapping[str, np.ndarray]) -> dict[Node, float]:
    """Largest |value| of every node of ``graph`` over the samples in ``calib``.

    ``calib`` maps each input name to samples: an array whose trailing dimensions are
    the input's (any number of samples; batched as the graph's batch dimension).
    """
    nodes = [n for n in graph.nodes() if n.op is not Op.PARAM]
    probe = Graph(graph.inputs, tuple(nodes))
    stats: dict[Node, float] = {}
    for batch in _batches(graph, calib):
        for n, v in zip(nodes, run_float(probe, params, batch)):
            m = float(np.max(np.abs(v))) if v.size and np.issubdtype(v.dtype, np.floating) else 0.0
            stats[n] = max(stats.get(n, 0.0), m)
    return stats


def _weight(w: np.ndarray) -> tuple[np.ndarray, int]:
    ew = exponent_for(float(np.max(np.abs(w))))
    return quantize_array(w, ew), ew


def _weight_per_channel(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 weights and one exponent per output channel (axis 0), (O,) int64. Exponents
    more than 31 above the smallest are lowered to it + 31, so that every channel's
    requantizing shift fits [0, 31] (such a channel is ~2**-31 of the largest: zeros)."""
    m = np.abs(w.reshape(w.shape[0], -1)).max(axis=1)
    ew = np.array([exponent_for(float(v)) for v in m], np.int64)
    ew = np.minimum(ew, ew.min() + 31)
    q = np.stack([quantize_array(w[o], int(e)) for o, e in enumerate(ew)])
    return q, ew


class _Builder:
    #: whether depthwise convs become int8 DEPTHWISE nodes (CPU) rather than float ones
    DEPTHWISE = False

    def __init__(self, graph: Graph, params, stats, per_channel: bool = False,
                 group_channels: "int | None" = None):
        self.graph, self.fparams, self.stats = graph, params, stats
        self.per_channel, self.group_channels = per_channel, group_channels
        self.nodes: list[QNode] = []
        self.params: dict[str, np.ndarray] = {}
        self.of: dict[Node, int] = {}        # float node -> qnode index
        self.as_int_memo: dict[Node, int] = {}
        self.as_float_memo: dict[Node, int] = {}
        self.absorbed: set[Node] = set()     # fused into a later node's pattern
        users = graph.consumers()
        outs = set(graph.outputs)
        self.sole = {n: (us[0] if len(us) == 1 and n not in outs else None) for n, us in users.items()}

    def emit(self, node: QNode) -> int:
        self.nodes.append(node)
        return len(self.nodes) - 1

    def exp_of(self, n: Node) -> int:
        return exponent_for(self.stats.get(n, 0.0))

    def zp_of(self, n: Node) -> int:
        """The zero point of ``n`` as int8 (symmetric here: 0; ``qdq`` reads the model's)."""
        return 0

    def zp_in(self, n: Node) -> int:
        """The zero point ``n`` has (or will have) as int8."""
        q = self.nodes[self.of[n]]
        return q.zp if q.dtype == "int8" else self.zp_of(n)

    def as_int(self, n: Node) -> int:
        i = self.of[n]
        if self.nodes[i].dtype == "int8":
            return i
        if n not in self.as_int_memo:
            self.as_int_memo[n] = self.emit(QNode(QOp.QUANTIZE, (i,), n.shape, "int8",
                                                  self.exp_of(n), name=f"quantize.{i}",
                                                  zp=self.zp_of(n)))
        return self.as_int_memo[n]

    def as_float(self, n: Node) -> int:
        i = self.of[n]
        q = self.nodes[i]
        if q.dtype != "int8":
            return i
        if n not in self.as_float_memo:
            self.as_float_memo[n] = self.emit(QNode(QOp.DEQUANTIZE, (i,), n.shape, "float32",
                                                    attrs={"src_exp": q.exp, "src_zp": q.zp},
                                                    name=f"dequantize.{i}"))
        return self.as_float_memo[n]

    def param(self, n: Node) -> np.ndarray | None:
        return np.asarray(self.fparams[n.name]) if n.op is Op.PARAM else None

    # --- patterns -----------------------------------------------------------------
    def absorb(self, start: Node, channels: int, bias_shapes) -> tuple[Node, np.ndarray, bool]:
        """Follow bias add and relu after a conv/dense: (end node, bias float (O,), relu)."""
        end, bias, relu = start, np.zeros(channels, np.float64), False
        nxt = self.sole.get(end)
        if nxt is not None and nxt.op is Op.ADD and len(nxt.src) == 2:
            other = nxt.src[1] if nxt.src[0] is end else nxt.src[0]
            b = self.param(other)
            if b is not None and other is not end and tuple(b.shape) in bias_shapes(channels):
                bias = np.broadcast_to(b.reshape(-1), (channels,)).astype(np.float64)
                self.absorbed.add(end)
                end = nxt
        nxt = self.sole.get(end)
        if nxt is not None and nxt.op is Op.RELU:
            self.absorbed.add(end)
            end, relu = nxt, True
        return end, bias, relu

    def conv_node(self, n: Node) -> bool:
        return self.gemm_node(n, QOp.CONV2D)

    def dense_node(self, n: Node) -> bool:
        return self.gemm_node(n, QOp.DENSE)

    def gemm_node(self, n: Node, kind: QOp) -> bool:
        x, wn = n.src[0], n.src[1]
        w = self.param(wn)
        if w is None or len(n.src) != 2:
            return False
        depthwise = False      # groups = channels, one input channel each: a DEPTHWISE node
        if kind is QOp.CONV2D:
            a = n.attr_dict
            pads = tuple(a.get("pads", (0, 0, 0, 0)))
            groups = a.get("groups", 1)
            split = groups > 1 and self.group_channels is not None and w.shape[1] >= self.group_channels
            depthwise = (self.DEPTHWISE and groups > 1 and not split and w.shape[1] == 1
                         and groups == x.shape[1] == w.shape[0])
            if ((groups != 1 and not split and not depthwise) or tuple(a.get("dilations", (1, 1))) != (1, 1)
                    or pads[0] != pads[2] or pads[1] != pads[3] or max(pads) > 15 or len(n.shape) != 4):
                return False
            attrs = {"strides": tuple(a.get("strides", (1, 1))), "padding": (pads[0], pads[1])}
            shapes = lambda o: {(o,), (o, 1, 1), (1, o, 1, 1)}  # noqa: E731
        else:
            if len(x.shape) < 2:
                return False
            attrs = {}
            shapes = lambda o: {(o,), (1, o)}  # noqa: E731
        O = w.shape[0]
        end, bias, relu = self.absorb(n, O, shapes)
        xi = self.as_int(x)
        rows = int(np.prod(x.shape[:-1]))
        if kind is QOp.DENSE and len(x.shape) > 2:   # [..., K] activations (a transformer's) as [rows, K]
            xi = self.reshape_int8(xi, (rows, x.shape[-1]))
        ey, quantized = self.requant(w, bias, self.nodes[xi].exp, end)
        if depthwise:
            self.of[end] = self.gemm_qnode(QOp.DEPTHWISE, xi, end.shape, ey, quantized, attrs, relu,
                                           n.label)
            return True
        if kind is QOp.CONV2D and n.attr("groups", 1) > 1:
            self.of[end] = self.grouped(n, end, xi, quantized, attrs, relu, ey)
            return True
        shape = (rows, O) if kind is QOp.DENSE else end.shape
        out = self.gemm_qnode(kind, xi, shape, ey, quantized, attrs, relu, n.label)
        self.of[end] = out if shape == end.shape else self.reshape_int8(out, end.shape)
        return True

    def requant(self, w: np.ndarray, bias: np.ndarray, ex: int, end: Node):
        """The weight quantized, the output exponent and the requantization of a conv/dense of
        float weight ``w`` and bias (O,) on int8 input at exponent ``ex`` whose pattern ends
        at ``end``: ``(ey, (wq, bq, shift, ew, extra attrs))`` (module docstring)."""
        wq, ew = _weight_per_channel(w) if self.per_channel else _weight(w)
        ea = ex + np.asarray(ew, np.int64)       # accumulator exponent(s)
        ey = min(self.exp_of(end), int(ea.min()))
        ey = max(ey, int(ea.max()) - 31)
        shift = ea - ey
        bq = np.rint(bias * 2.0 ** ea) + np.where(shift > 0, 1 << np.maximum(shift - 1, 0), 0)
        bq = np.clip(bq, -2 ** 31, 2 ** 31 - 1).astype(np.int32)
        return int(ey), (wq, bq, shift, ew, {})

    def gemm_qnode(self, kind, xi, shape, ey, quantized, attrs, relu, label) -> int:
        """Emit a CONV2D / DENSE QNode of int8 weight ``wq``, int32 bias ``bq``, ``shift`` /
        ``ew`` (ints, or one per output channel) and extra attrs (ints, floats or one per
        output channel) from ``quantized``."""
        wq, bq, shift, ew, extra = quantized
        k = len(self.nodes)
        pw, pb = f"q{k}.weight", f"q{k}.bias"
        self.params[pw], self.params[pb] = wq, bq
        attrs = dict(attrs, shift=_attr(shift, int), relu=relu, ew=_attr(ew, _num),
                     **{key: _attr(v, _num) for key, v in extra.items()})
        return self.emit(QNode(kind, (xi,), tuple(shape), "int8", ey, attrs, (pw, pb),
                               name=label or f"{kind.value}{k}"))

    def grouped(self, n: Node, end: Node, xi: int, quantized, attrs, relu, ey) -> int:
        """A grouped conv as one ungrouped CONV2D per group (each on the accelerator's GEMM
        core), on an INT8 SLICE of the group's input channels, joined by an INT8 CONCAT: the
        weight, bias and shifts quantized for the whole conv and cut by output channel, so the
        groups share the output exponent and the result equals the grouped conv's."""
        wq, bq, shift, ew, extra = quantized
        g, x = n.attr("groups"), self.nodes[xi]
        cg, og = x.shape[1] // g, wq.shape[0] // g
        outs = []
        for i in range(g):
            cut = slice(i * og, (i + 1) * og)
            begin = (0, i * cg, 0, 0)
            end_ = (x.shape[0], (i + 1) * cg, x.shape[2], x.shape[3])
            part = self.emit(QNode(QOp.INT8, (xi,), (x.shape[0], cg) + x.shape[2:], "int8", x.exp,
                                   {"op": "SLICE", "attrs": {"begin": begin, "end": end_, "step": (1, 1, 1, 1)}},
                                   name=f"{n.label or 'conv'}.group{i}.input", zp=x.zp))
            per = [v[cut] if np.ndim(v) else v for v in (shift, ew)]
            cut_extra = {key: v[cut] if np.ndim(v) else v for key, v in extra.items()}
            outs.append(self.gemm_qnode(QOp.CONV2D, part, (end.shape[0], og) + end.shape[2:], ey,
                                        (wq[cut], bq[cut], *per, cut_extra), attrs, relu,
                                        f"{n.label or 'conv'}.group{i}"))
        return self.emit(QNode(QOp.INT8, tuple(outs), end.shape, "int8", ey,
                               {"op": "CONCAT", "attrs": {"axis": 1}}, name=f"{n.label or 'conv'}.groups",
                               zp=self.nodes[outs[0]].zp))

    def reshape_int8(self, i: int, shape: tuple) -> int:
        """An INT8 RESHAPE of value ``i`` to ``shape`` (same exponent)."""
        return self.emit(QNode(QOp.INT8, (i,), tuple(shape), "int8", self.nodes[i].exp,
                               {"op": "RESHAPE", "attrs": {"newshape": tuple(shape)}}, name=f"reshape.{i}",
                               zp=self.nodes[i].zp))

    def residual_add(self, n: Node) -> bool:
        a, b = n.src
        if a.op is Op.PARAM or b.op is Op.PARAM or a.shape != n.shape or b.shape != n.shape:
            return False
        ai, bi = self.as_int(a), self.as_int(b)
        ea, eb = self.nodes[ai].exp, self.nodes[bi].exp
        end, relu = n, False
        nxt = self.sole.get(n)
        if nxt is not None and nxt.op is Op.RELU:
            self.absorbed.add(n)
            end, relu = nxt, True
        E = max(ea, eb)
        eo = max(min(self.exp_of(end), E), E - 31)
        self.of[end] = self.emit(QNode(QOp.ADD, (ai, bi), end.shape, "int8", int(eo),
                                       {"la": E - ea, "lb": E - eb, "shift": E - eo, "relu": relu},
                                       name=n.label or "add"))
        return True

    def concat_int8(self, n: Node) -> bool:
        """Concat on int8 when every input is int8 at one exponent (exact); else False."""
        srcs = [self.of.get(s) for s in n.src]
        if any(i is None or self.nodes[i].dtype != "int8" for i in srcs):
            return False
        exps = {(self.nodes[i].exp, self.nodes[i].zp) for i in srcs}
        if len(exps) != 1:
            return False
        exp, zp = exps.pop()
        self.of[n] = self.emit(QNode(QOp.INT8, tuple(srcs), n.shape, "int8", exp,
                                     {"op": n.op.name, "attrs": n.attr_dict},
                                     name=n.label or "concat", zp=zp))
        return True

    def visit(self, n: Node) -> None:
        if n in self.of or n in self.absorbed or n.op is Op.PARAM:
            return
        if n.op is Op.INPUT:
            self.of[n] = self.emit(QNode(QOp.INPUT, (), n.shape, n.dtype, name=n.name))
            return
        if any(not _real(s) for s in n.src if s.op is not Op.PARAM):
            self.cpu_node(n)  # integer / bool values (token ids, masks) are never quantized
            return
        rule = ACCELERATED.get(n.op)
        if rule is not None and getattr(self, rule[0])(n):
            return
        acts = [s for s in n.src if s.op is not Op.PARAM]
        if n.op is Op.GLOBAL_AVG_POOL:
            xi = self.as_int(n.src[0])
            self.of[n] = self.emit(QNode(QOp.MEAN, (xi,), n.shape, "int8", self.nodes[xi].exp,
                                         name=n.label or "mean", zp=self.nodes[xi].zp))
            return
        if n.op is Op.CONCAT and len(acts) == len(n.src) and self.concat_int8(n):
            return
        if n.op is Op.RESIZE and n.attr_dict.get("mode") != "nearest":
            acts = []  # linear interpolation makes new values: float
        if n.op is Op.RELU and acts and self.zp_in(acts[0]):
            acts = []  # relu at a zero point is max(q, zp), no int8 graph op: float
        if n.op in INT8_OPS and len(acts) == len(n.src) == 1:
            xi = self.as_int(n.src[0])
            x = self.nodes[xi]
            self.of[n] = self.emit(QNode(QOp.INT8, (xi,), n.shape, "int8", x.exp,
                                         {"op": n.op.name, "attrs": n.attr_dict},
                                         name=n.label or n.op.name.lower(), zp=x.zp))
            return
        self.cpu_node(n)

    def cpu_node(self, n: Node) -> None:
        """``n`` on the CPU in its own dtypes (float fallback; integer ops as they are): params
        become constants of the node, int8 sources are dequantized."""
        srcs = []
        for s in n.src:
            if s.op is Op.PARAM:
                key = f"f{len(self.nodes)}.{s.name}"
                self.params[key] = np.asarray(self.fparams[s.name])
                srcs.append(self.emit(QNode(QOp.FLOAT, (), s.shape, s.dtype,
                                            attrs={"op": "PARAM", "attrs": {}}, params=(key,),
                                            name=key)))
            else:
                srcs.append(self.as_float(s))
        self.of[n] = self.emit(QNode(QOp.FLOAT, tuple(srcs), n.shape, n.dtype,
                                     attrs={"op": n.op.name, "attrs": n.attr_dict},
                                     name=n.label or n.op.name.lower()))


def _num(v) -> "int | float":
    """An int when ``v`` is integral (a power-of-two exponent), else a float."""
    return int(v) if float(v).is_integer() else float(v)


def _attr(v, kind):
    """A QNode attribute: ``kind(v)``, or a tuple of them for per-channel arrays."""
    return tuple(kind(x) for x in np.asarray(v).reshape(-1)) if np.ndim(v) else kind(v)


def _real(n: Node) -> bool:
    return np.issubdtype(np.dtype(n.dtype), np.floating)


def quantize(graph: Graph, params: Mapping[str, np.ndarray],
             calib: Mapping[str, np.ndarray], *, prepared: bool = False,
             per_channel: bool = False, group_channels: "int | None" = None) -> QGraph:
    """Quantize a float graph (module docstring).

    Args:
        graph, params: the float graph (from ``compiler.frontend.from_onnx``), static shapes.
        calib: input name -> sample array (``calibrate``).
        prepared: ``graph`` already went through ``prepare``.
        per_channel: one power-of-two weight exponent per output channel of every
            conv2d/dense (attrs ``ew`` and ``shift`` become tuples of O ints) instead of
            one per tensor.
        group_channels: a grouped conv whose groups have at least this many input channels
            becomes one int8 conv per group (``_Builder.grouped``; ``build_vta`` passes
            BLOCK_IN, so each group fills the GEMM core's input lanes); None: grouped convs
            run in float on the CPU.

    Returns:
        QGraph whose outputs are float32 (dequantized), in the graph's output order.
    """
    if not prepared:
        graph, params = prepare(graph, params)
    stats = calibrate(graph, params, calib)
    b = _Builder(graph, params, stats, per_channel, group_channels)
    for n in graph.nodes():
        b.visit(n)
    outs = [b.as_float(o) for o in graph.outputs]
    names = list(graph.output_names) or [f"output{i}" for i in range(len(outs))]
    return QGraph(b.nodes, [b.of[i] for i in graph.inputs], outs, names, b.params)
