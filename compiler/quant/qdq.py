"""Quantized models in: a QDQ model's own scales -> the one quantized-graph form (``QGraph``).

A QDQ model (``onnxruntime.quantization.quantize_static(..., quant_format=QuantFormat.QDQ)``)
is a float graph with QuantizeLinear -> DequantizeLinear pairs on its activations and
dequantized int8 weights (the frontend folds those into float constants). ``import_qdq``
turns it into a ``QGraph`` (``qgraph`` docstring) at the model's scales instead of
calibrated ones, so every consumer of a ``QGraph`` runs it unchanged: the exact numpy oracle
(``qgraph.run``), the accelerator route (``build_vta``: partition, programs, CPU kernels)
and, later, a CPU int8 route (the weights, biases and requantization below are what an
int8 x int8 -> int32 GEMM with a fused epilogue needs).

Contract of the QGraph it returns:

- every int8 value carries the scale the model gives its tensor, as ``exp = -log2(scale)``:
  an int when the scale is a power of two, else a float (``qgraph.quantize_array`` and
  ``kernels.quantize`` then compute onnxruntime's ``x / scale`` in float32);
- CONV2D / DENSE carry the model's int8 weights (per tensor, or per output channel with
  ``ew`` and ``shift`` tuples) and the bias at the accumulator's scale ``sx * sw`` (the
  model's own int32 bias: onnxruntime quantizes biases at that scale);
- requantization ``M = sx * sw / sy`` (per output channel), in one of two forms
  (``requant=``): ``"integer"`` (the accelerator's): where every ``M`` is a power of
  two ``2**-k`` (0 <= k <= 31), a plain rounding shift by ``k`` (the quantizer's own form);
  else integers only: a pre-shift, a multiplier and a post shift (attrs ``shift``, ``mult``,
  ``post``; ``layout.requantize``), with ``err`` the bound on its error in output LSBs;
  ``"float"`` (the CPU's): onnxruntime's float32 ``M`` as attr ``fscale``
  (``ort_requant``: bit-exact to its QLinearConv / QGemm), the weight scales recovered
  exactly from the dequantized weights, and a MEAN as its QLinearGlobalAveragePool;
- the residual ADD on int8 where the scales of both operands and of the result are powers of
  two (shifts), else a RESCALE_ADD (float32, as onnxruntime's DequantizeLinear -> Add ->
  QuantizeLinear; CPU) where the model quantizes the sum; depthwise convs as DEPTHWISE (CPU,
  the conv's requantization); a unary op from one scale to another (Clip/Relu6) as a LUT
  exact to onnxruntime (``lut.py``); any other op whose scales differ from its source's runs
  in float between a DEQUANTIZE and a QUANTIZE at the model's scales, as onnxruntime runs a
  QDQ graph;
- data movement (reshape, max pool, relu, ...) on int8 where the model keeps the scale;
- an op run in float whose result the model quantizes is quantized there, at the model's
  scale and zero point, so its consumers read the model's levels (the clip at a uint8 zero
  point 0 is how onnxruntime's quantizer keeps a relu it folds away).

The accelerator's ALU MUL keeps the low 32 bits of a product with a 16-bit immediate, so
the multiplier is at most 15 bits (32767) and the accumulator is first shifted right
(rounded, through the bias) until ``|acc >> shift| < 2**16`` for every input: the
pre-shift approximation. Its error (``err``) is below 0.02 LSB on the test models; the
accelerator and the oracle compute the same integers, bit for bit.

Zero points (asymmetric activations, quantize_static's defaults: uint8 at, say, 131, or
int8 at -4): a uint8 value ``u`` at zero point ``z`` is stored as the int8 ``u - 128`` at
zero point ``z - 128`` (the same levels), so every int8 value carries a zero point ``zp``
(``qgraph`` docstring), handled exactly:

- a conv/dense on an input at ``zx``: ``sum (x - zx) w = sum x w - zx * sum w``, the second
  term folded into the int32 bias per output channel; that holds where every tap reads a
  real input, so a padded conv's input is first padded with ``zx`` (an INT8 PAD on the CPU,
  the real value 0) and the conv runs unpadded (the GEMM core pads with 0, which is not
  ``zx``). No re-centring of the input, so no clamp: uint8 levels far from 128 stay exact;
- the output's zero point ``zy`` is added after requantizing (on the accelerator an ALU ADD
  immediate), relu clamps at ``zy`` and the clip is to [-128, 127]: onnxruntime's
  ``saturate(round(acc * M) + zy)``, within the requantization's ``err``;
- a mean keeps its source's zero point (``sum(q) / HW`` differs from ``sum(q - zp) / HW``
  by exactly ``zp``); a relu whose source has a zero point (``max(q, zp)``) and the int8
  ADD at non-zero zero points run in float between the model's scales, as onnxruntime does.

Accepted: int8 or uint8 activations at any zero point, int8 weights with zero point 0,
per-tensor activation scales, per-tensor or per-channel weight scales. Anything else raises
``QuantizeError`` naming the tensor and the fix.
"""
from __future__ import annotations

import math
import dataclasses
from typing import Mapping

import numpy as np

from compiler.graph import Graph, Node, Op
from compiler.graph.ops import UNARY
from compiler.graph.rewrite import rewrite

from . import ort_requant
from .lut import clip_params, scale_of, unary_table
from .qgraph import QGraph, QNode, QOp
from .quantize import INT8_OPS, QuantizeError, _Builder, _real

#: pre-shift target: |acc >> shift| < 2**ACC_BITS, so that times a multiplier below 2**15
#: (the ALU's 16-bit signed immediate) the product stays in int32
ACC_BITS, MULT_MAX = 16, 32767
#: activation dtype -> what turns its values and zero point into the QGraph's int8 ones:
#: uint8 ``u`` with zero point ``z`` is int8 ``u - 128`` with zero point ``z - 128``
STORED_OFFSET = {"int8": 0, "uint8": -128}


def is_qdq(graph: Graph) -> bool:
    """Whether ``graph`` holds QuantizeLinear / DequantizeLinear ops (a QDQ model)."""
    return any(n.op in (Op.QUANTIZE, Op.DEQUANTIZE) for n in graph.nodes())


#: how a conv's / dense layer's requantization is carried (``import_qdq(requant=...)``)
REQUANT_FORMS = ("integer", "float")


def import_qdq(graph: Graph, params: Mapping[str, np.ndarray], *,
               group_channels: "int | None" = None, requant: str = "integer") -> QGraph:
    """The QGraph of QDQ model ``graph`` at the model's own scales (module docstring).

    Args:
        graph, params: the imported model (``compiler.frontend.import_model``), static shapes.
        group_channels: as ``quantize.quantize`` (grouped convs with groups this wide become
            one conv per group).
        requant: ``"integer"`` (the accelerator's pre-shift, multiplier and post-shift; the
            default) or ``"float"`` (for the CPU: onnxruntime's float32 ratio per output
            channel, attr ``fscale``, ``compiler.quant.ort_requant``).

    Returns:
        a QGraph whose outputs are float32 (dequantized), in the graph's output order.

    Raises:
        QuantizeError: activations of another dtype than int8 / uint8, a per-axis activation
            scale or zero point, or conv/dense weights that are not int8 times a scale.
    """
    if requant not in REQUANT_FORMS:
        raise ValueError(f"requant must be one of {', '.join(map(repr, REQUANT_FORMS))}, "
                         f"not {requant!r}")
    stripped, exps, zps, unsigned = _strip(graph, params)
    b = _QdqBuilder(stripped, params, exps, zps, group_channels, requant == "float", unsigned)
    for n in stripped.nodes():
        b.visit(n)
    outs = [b.as_float(o) for o in stripped.outputs]
    names = list(stripped.output_names) or [f"output{i}" for i in range(len(outs))]
    return QGraph(b.nodes, [b.of[i] for i in stripped.inputs], outs, names, b.params)


def exponent_of_scale(scale: float) -> "int | float":
    """``-log2(scale)``: an int for a power of two, else a float."""
    e = -math.log2(float(scale))
    return int(e) if e.is_integer() else e


def _strip(graph: Graph, params) -> tuple[Graph, dict[Node, "int | float"], dict[Node, int],
                                          set]:
    """``graph`` with every DequantizeLinear(QuantizeLinear(t)) pair replaced by ``t``, the
    exponent and the int8 zero point of each such ``t``, and the set of those ``t`` the model
    quantizes to uint8."""
    exps: dict[Node, int | float] = {}
    zps: dict[Node, int] = {}
    unsigned: set = set()

    def pair(d: Node):
        q = d.src[0]
        if q.op is not Op.QUANTIZE:
            return None
        t, scale, zp = q.src
        what = f"QuantizeLinear {q.label or t.label or t.name!r}"
        s, z = (np.asarray(params[p.name]) if p.op is Op.PARAM else None for p in (scale, zp))
        if s is None or z is None or s.size != 1 or z.size != 1:
            raise QuantizeError(f"{what}: scale {list(scale.shape)} and zero point "
                                f"{list(zp.shape)} must be one constant each (per-tensor "
                                "activation scales); quantize the model per tensor")
        if q.dtype not in STORED_OFFSET:
            raise QuantizeError(f"{what}: activations of dtype {q.dtype}; the accelerator's "
                                "are 8 bits: quantize with activation_type=QuantType.QUInt8 "
                                "or QuantType.QInt8")
        exps.setdefault(t, exponent_of_scale(s.reshape(())))
        zps.setdefault(t, int(z.reshape(())) + STORED_OFFSET[q.dtype])
        if q.dtype == "uint8":
            unsigned.add(t)
        return t

    return rewrite(graph, {Op.DEQUANTIZE: [pair]}), exps, zps, unsigned


def model_weight(w: np.ndarray, what: str) -> tuple[np.ndarray, "int | float | np.ndarray"]:
    """A dequantized weight ``w`` [O, ...] back as (int8 values, exponent(s)): the model's int8
    and its scale, per tensor or per output channel, a power of two or ``max|w| / 127``
    (onnxruntime's symmetric weight scale); exponents as ``exponent_of_scale``.

    Raises:
        QuantizeError: ``w`` is none of those (names ``what``).
    """
    w64 = np.asarray(w, np.float64)
    flat = np.abs(w64.reshape(w64.shape[0], -1))
    for per in (np.array([flat.max()]), flat.max(axis=1)):
        per = np.where(per > 0, per, 1.0)
        # a power of two (the one with 63.5 < max / s <= 127), or onnxruntime's max / 127
        for scale in (2.0 ** np.ceil(np.log2(per / 127.0)), per / 127.0):
            s = scale.astype(np.float32).astype(np.float64)
            bshape = (-1,) + (1,) * (w64.ndim - 1)
            q = w64 / s.reshape(bshape)
            r = np.rint(q)
            if np.abs(q - r).max() < 1e-3 and np.abs(r).max() <= 127:
                e = np.array([exponent_of_scale(v) for v in s], dtype=object)
                exp = e[0] if len(s) == 1 else np.array([float(v) for v in e])
                return r.astype(np.int8), exp
    raise QuantizeError(f"{what}: the weights are not int8 values times a per-tensor or "
                        "per-output-channel scale (a QDQ weight with zero point 0); quantize "
                        "the model with weight_type=QuantType.QInt8")


class _Unscaled(Exception):
    """A value the model gives no scale must become int8: the node runs in float instead."""


class _QdqBuilder(_Builder):
    """``quantize._Builder`` at the model's scales (module docstring)."""

    DEPTHWISE = True

    def __init__(self, graph, params, exps, zps, group_channels, float_requant=False,
                 unsigned=frozenset()):
        super().__init__(graph, params, {}, per_channel=False, group_channels=group_channels)
        self.exps, self.zps = exps, zps
        self.float_requant = float_requant
        self.unsigned = unsigned   # the tensors the model quantizes to uint8 (_strip)
        self.zero_in = self.zero_out = 0   # the zero points of the conv/dense being built

    def exp_of(self, n: Node):
        if n not in self.exps and n.op is Op.RELU:   # relu commutes with a zero-point-0 scale
            return self.exp_of(n.src[0])
        if n not in self.exps:
            raise _Unscaled(n)
        return self.exps[n]

    def zp_of(self, n: Node) -> int:
        if n not in self.zps and n.op is Op.RELU:    # relu of an int8 value stays at its levels
            return self.zp_of(n.src[0])
        if n not in self.zps:
            raise _Unscaled(n)
        return self.zps[n]

    def gemm_node(self, n: Node, kind) -> bool:
        self.zero_in = self.zp_in(n.src[0])
        return super().gemm_node(n, kind)

    def gemm_qnode(self, kind, xi, shape, ey, quantized, attrs, relu, label) -> int:
        """As the base, at the model's zero points: an input with zp != 0 padded by an INT8 PAD
        of value zp first (the GEMM core pads with 0; the bias holds ``-zp * sum w``, exact
        only where every tap reads a real input), the output at the model's zero point."""
        x = self.nodes[xi]
        if x.zp and any(attrs.get("padding", (0, 0))):
            ph, pw = attrs["padding"]
            xi = self.emit(QNode(QOp.INT8, (xi,), x.shape[:2] + (x.shape[2] + 2 * ph, x.shape[3] + 2 * pw),
                                 "int8", x.exp, {"op": "PAD", "attrs": {
                                     "pads": (0, 0, ph, pw, 0, 0, ph, pw), "mode": "constant",
                                     "value": x.zp}}, name=f"{label or 'conv'}.pad", zp=x.zp))
            attrs = dict(attrs, padding=(0, 0))
        i = super().gemm_qnode(kind, xi, shape, ey, quantized, attrs, relu, label)
        self.nodes[i] = dataclasses.replace(self.nodes[i], zp=self.zero_out)
        return i

    def as_int(self, n: Node) -> int:
        if self.nodes[self.of[n]].dtype != "int8":
            self.exp_of(n)
        return super().as_int(n)

    def visit(self, n: Node) -> None:
        if n in self.of or n in self.absorbed or n.op in (Op.PARAM, Op.INPUT):
            return super().visit(n)
        if self._table(n):
            return
        if self._rescales(n):
            return self.cpu_node(n)
        saved = (len(self.nodes), set(self.absorbed), dict(self.as_int_memo),
                 dict(self.as_float_memo), dict(self.params), dict(self.of))
        try:
            super().visit(n)
        except _Unscaled:   # no scale where int8 is needed: undo, run the node in float
            count, self.absorbed, self.as_int_memo, self.as_float_memo, self.params, self.of = saved
            del self.nodes[count:]
            self.cpu_node(n)
            return
        i = self.of.get(n)
        if self.float_requant and n.op is Op.GLOBAL_AVG_POOL and i is not None \
                and self.nodes[i].op is QOp.MEAN:
            self._float_mean(i)

    def _float_mean(self, i: int) -> None:
        """MEAN node ``i`` as onnxruntime's QLinearGlobalAveragePool (``ort_requant``): attrs
        fscale (float32 s / (s * HW), the source's scale s) and zin (the source's zero point)."""
        q = self.nodes[i]
        x = self.nodes[q.src[0]]
        hw = int(np.prod(x.shape[2:]))
        s = scale_of(q.exp)
        self.nodes[i] = dataclasses.replace(q, attrs={
            "fscale": float(ort_requant.mean_ratio(scale_of(x.exp), s, hw)), "zin": x.zp})

    def cpu_node(self, n: Node) -> None:
        """As the base, then, where the model quantizes the result, quantized at its scale and
        zero point: what the model's consumers read (the clip of a uint8 at zero point 0 is
        the relu onnxruntime's quantizer folds into it)."""
        super().cpu_node(n)
        if n in self.exps:
            self.of[n] = self.as_int(n)

    def _table(self, n: Node) -> bool:
        """A unary elementwise op from one scaled value to another (Clip/Relu6 between a conv's
        scale and its own) as an int8 LUT (``compiler.quant.lut``), unless the int8 op at one
        scale already does it."""
        if n.op not in UNARY or len(n.src) != 1 or n not in self.exps or not _real(n.src[0]):
            return False
        if n.op in INT8_OPS and not self._rescales(n):
            return False
        try:
            xi = self.as_int(n.src[0])
        except _Unscaled:
            return False
        x = self.nodes[xi]
        ey, zy = self.exps[n], self.zps.get(n, 0)
        attrs = {"table": unary_table(n.op, n.attr_dict, x.exp, x.zp, ey, zy)}
        if n.op is Op.CLIP:
            attrs["clip"] = clip_params(n.attr_dict, x.exp, x.zp, ey, zy)
        self.of[n] = self.emit(QNode(QOp.LUT, (xi,), n.shape, "int8", ey, attrs,
                                     name=n.label or n.op.name.lower(), zp=zy))
        return True

    def _rescales(self, n: Node) -> bool:
        """An int8 op (data movement, mean, concat) whose model scale is not its source's:
        onnxruntime requantizes there, so it runs in float between the model's scales."""
        if n.op is Op.GLOBAL_AVG_POOL and n not in self.exps:
            return True    # the model keeps the mean in float: no rounding to the source's scale
        if n.op not in INT8_OPS | {Op.GLOBAL_AVG_POOL, Op.CONCAT} or n not in self.exps:
            return False
        srcs = [s for s in n.src if s.op is not Op.PARAM]
        if not srcs or not all(_real(s) for s in srcs):
            return False
        have = [(self.nodes[self.of[s]].exp, self.nodes[self.of[s]].zp)
                if self.nodes[self.of[s]].dtype == "int8" else (self.exps.get(s), self.zps.get(s))
                for s in srcs]
        return any(e != (self.exps[n], self.zps[n]) for e in have)

    def residual_add(self, n: Node) -> bool:
        """The int8 ADD only where its scales are powers of two (integer shifts) and its zero
        points 0."""
        a, b = n.src
        for s in (a, b):
            if s.op is Op.PARAM:
                return False
            i = self.of[s]
            q = self.nodes[i]
            e, z = (q.exp, q.zp) if q.dtype == "int8" else (self.exps.get(s), self.zps.get(s))
            if not isinstance(e, int) or z != 0:
                return self.rescale_add(n)
        end = self.sole.get(n) if self.sole.get(n) is not None and self.sole[n].op is Op.RELU else n
        if not isinstance(self.exps.get(end), int) or self.zps.get(end) != 0:
            return self.rescale_add(n)
        return super().residual_add(n)

    def rescale_add(self, n: Node) -> bool:
        """An add at scales that are not powers of two (or at zero points) as an int8
        RESCALE_ADD on the CPU, where the model quantizes its result; else False (float)."""
        a, b = n.src
        if n not in self.exps or a.shape != n.shape or b.shape != n.shape:
            return False
        ai, bi = self.as_int(a), self.as_int(b)
        qa, qb = self.nodes[ai], self.nodes[bi]
        ey, zy = self.exps[n], self.zps.get(n, 0)
        scales = {k: float(scale_of(e)) for k, e in (("sa", qa.exp), ("sb", qb.exp), ("sc", ey))}
        if self.float_requant and {a, b, n} <= self.unsigned:
            # onnxruntime fuses an all-uint8 add into QLinearAdd (ort_requant.add)
            scales["qlinear"] = -STORED_OFFSET["uint8"]
        self.of[n] = self.emit(QNode(QOp.RESCALE_ADD, (ai, bi), n.shape, "int8", ey,
                                     {"za": qa.zp, "zb": qb.zp, **scales},
                                     name=n.label or "add", zp=zy))
        return True

    def requant(self, w, bias, ex, end):
        ey = self.exp_of(end)
        self.zero_out = self.zp_of(end)
        wq, ew = model_weight(w, f"weights of {end.label or end.op.name.lower()}")
        O = wq.shape[0]
        ea = ex + np.broadcast_to(np.asarray(ew, np.float64), (O,))   # accumulator exponents
        k = ea - ey                                                     # M = 2**-k
        # the input's zero point: sum (x - zx) w = sum x w - zx sum w, folded into the bias
        fold = self.zero_in * wq.reshape(O, -1).astype(np.int64).sum(axis=1)
        bq = np.rint(np.asarray(bias, np.float64) * 2.0 ** ea) - fold
        per = np.ndim(ew) > 0
        if self.float_requant:
            return ey, self._float_requant(w, wq, ew, ex, ey, bq, per)
        if np.all(k == np.rint(k)) and k.min() >= 0 and k.max() <= 31:
            shift = k.astype(np.int64)
            bq = bq + np.where(shift > 0, 2.0 ** (shift - 1), 0)
            return ey, (wq, _int32(bq), shift if per else int(shift[0]), ew, {})
        bound = np.abs(wq.reshape(O, -1).astype(np.int64)).sum(axis=1) * 128 + np.abs(bq)
        pre = np.maximum(0, np.ceil(np.log2(bound + 1)).astype(np.int64) - ACC_BITS)
        if not per:            # one shift and one multiplier for the tensor: the widest channel's
            pre = np.full_like(pre, pre.max())
        m = 2.0 ** -k
        post = int(math.floor(math.log2(MULT_MAX / float((m * 2.0 ** pre).max()))))
        if post < 15:          # a ratio near 1 or above: shift more before the multiply
            pre, post = pre + 15 - post, 15
        post = min(post, 46)
        if pre.max() > 31:
            raise QuantizeError(f"{end.label or end.op.name.lower()}: the scale ratio "
                                f"{float(m.max()):.3g} needs a shift of {int(pre.max())} (> 31)")
        mult = np.rint(m * 2.0 ** (pre + post)).astype(np.int64)
        bq = bq + np.where(pre > 0, 2.0 ** (pre - 1), 0)
        # in output LSBs: the pre-shift's rounding times the multiplier, and the multiplier's
        # rounding times the largest accumulator that does not saturate
        reach = np.minimum(bound, (128.0 + abs(self.zero_out)) / m)
        err = float((0.5 * mult / 2.0 ** post
                     + reach * np.abs(mult / 2.0 ** (pre + post) - m)).max())
        one = (lambda v: v) if per else (lambda v: int(v[0]))
        return ey, (wq, _int32(bq), one(pre), ew,
                    {"mult": one(mult), "post": post, "err": round(err, 4)})

    @staticmethod
    def _float_requant(w, wq, ew, ex, ey, bq, per: bool):
        """(weight, bias, shift 0, ew, {"fscale": M}) with onnxruntime's float32 ratio ``M =
        (sx * sw) / sy`` per output channel (``ort_requant``); the bias without rounding
        offsets (the float product rounds)."""
        O = wq.shape[0]
        sw = np.array([scale_of(e) for e in np.broadcast_to(np.asarray(ew, object), (O,))],
                      np.float32)
        sw = ort_requant.exact_weight_scales(w, wq, sw)
        m = ort_requant.conv_ratio(scale_of(ex), sw, scale_of(ey))
        fscale = tuple(float(v) for v in m) if per else float(m[0])
        shift = np.zeros(O, np.int64) if per else 0
        return wq, _int32(bq), shift, ew, {"fscale": fscale}


def _int32(v) -> np.ndarray:
    return np.clip(v, -2 ** 31, 2 ** 31 - 1).astype(np.int32)
