"""The quantized graph: int8 tensors with power-of-two scales, and its exact numpy executor.

A ``QGraph`` is a list of ``QNode``s in topological order (a node's ``src`` are
indices of earlier nodes). Every value is either

- ``int8`` with an exponent ``exp`` and a zero point ``zp`` (an int in [-128, 127], 0 unless
  a QDQ model's activations are asymmetric): the real value is ``(q - zp) * 2**-exp`` (per
  tensor; a model's uint8 ``u`` with zero point ``z`` is stored as ``q = u - 128`` with
  ``zp = z - 128``, the same levels). ``exp`` is an int for power-of-two scales (the
  quantizer's own, and a model's own when they are powers of two) and a float,
  ``-log2(scale)``, for a QDQ model's other scales (``qdq.import_qdq``), or
- ``float32`` (float graph inputs, outputs, and ops that run in float on the CPU), or
- the graph's integer / bool dtype (token ids, masks, and ops that read them: never
  quantized, run on the CPU as the float graph runs them).

Ops (``QOp``) and their integer semantics, the same as the accelerator's
(``compiler.topi.vta.layout.conv2d_reference``, ``add_reference``)::

    INPUT       graph input (name), in the graph's dtype
    QUANTIZE    float -> int8: clip(round_half_even(x * 2**exp) + zp, -128, 127) (a float
                exp, a model's scale s: x / s in float32, onnxruntime's QuantizeLinear)
    DEQUANTIZE  int8 -> float32: (q - src_zp) * 2**-src_exp (attrs src_exp, src_zp)
    CONV2D      int8 x, params weight (OIHW int8), bias ((O,) int32):
                acc = sum x*w (int32) + bias; y = clip(relu?((acc >> shift) + zp), -128, 127)
                with relu? = max(., zp) (real 0). The input's zero point is folded into the
                bias (``bias - zp_x * sum w`` per output channel), so x must not be padded
                with anything but its zero point: an input with zp != 0 is padded by an
                INT8 PAD (value zp) before a CONV2D of padding 0. On the CPU route
                (``fuse_pad``) the PAD folds into the conv (or DEPTHWISE) as attr
                pad_zp: the padding reads that int8 value instead of 0.
                attrs: strides, padding (symmetric h, w), shift, relu, ew (weight
                exponent); with per-channel weights shift and ew are tuples of O ints.
                Scales that are not powers of two add attrs mult (int, or O ints, in
                [1, 32767]) and post (15..46): after the shift
                t = (t * mult) >> (post - 15); t = (t + 2**14) >> 15 in int32, i.e.
                acc * mult * 2**-(shift + post) rounded (``layout.requantize``), and
                err: a bound on that integer requantization's error against the exact
                scale ratio, in output LSBs.
                A QDQ model imported for the CPU (``import_qdq(requant="float")``) carries
                instead attr fscale (a float32 value, or O of them) and shift 0:
                y = clip(relu?(round_half_even(float32(acc) * fscale) + zp), -128, 127),
                onnxruntime's requantization (``ort_requant``)
    DENSE       the same on (N, C) x (O, C)
    ADD         int8 a, int8 b (same shape): ((a << la) + (b << lb) [+ round]) >> shift,
                relu?, clip; int32 wrapping, round = 2**(shift-1) when shift > 0
                attrs: la, lb (left shifts to a common exponent), shift, relu (0..31)
    DEPTHWISE   CONV2D with one input channel per output channel (groups = C = O): weight
                (C, 1, KH, KW) int8, bias (C,) int32, the same attrs and requantization; CPU.
                CONV2D / DEPTHWISE on the CPU may carry a LUT's ``table`` (``lut.fuse_tables``),
                read after the clip
    RESCALE_ADD int8 a, b at any scales and zero points -> int8 at the result's, in float32
                as onnxruntime's DequantizeLinear -> Add -> QuantizeLinear:
                y = clip(round_half_even(((a - za) * sa + (b - zb) * sb) / sc) + zp, -128, 127)
                (each operation rounded to float32); attrs za, zb, sa, sb, sc (float32
                scales); with attr qlinear (an all-uint8 add: 128) onnxruntime's QLinearAdd
                instead (``ort_requant``). The QDQ residual add whose scales are not powers
                of two (CPU)
    LUT         int8 -> int8 through a table: y = table[q + 128] (attrs table: 256 ints; a
                unary op between two scales, ``compiler.quant.lut``), exp and zp the result's
    MEAN        global average pool on int8: floor((sum + HW // 2) / HW), same exp and zp;
                with attrs fscale and zin (``import_qdq(requant="float")``) onnxruntime's
                QLinearGlobalAveragePool: round_half_even(float32(sum - zin * HW) * fscale) + zp
    INT8        a graph op (``compiler.graph.Op`` name in attrs "op", its attributes
                in "attrs") that moves or selects values only (reshape, max pool,
                relu when zp is 0, ...), run on the int8 tensor; same exp and zp
    FLOAT       a graph op run on the CPU in the graph's dtypes (float32 softmax, anything
                else; integer ops such as an embedding Gather on int64 ids)

Weights and biases live in ``QGraph.params`` (name -> array). ``run(qgraph, inputs)``
is the oracle the accelerator must match bit for bit; ``run(..., keep=True)``
returns every value.
"""
from __future__ import annotations

import dataclasses
import enum
from typing import Any, Mapping

import numpy as np

from compiler.topi.vta.layout import add_reference, conv2d_reference, requantize

from . import ort_requant


class QOp(str, enum.Enum):
    # leaves and domain changes
    INPUT = "input"
    QUANTIZE = "quantize"
    DEQUANTIZE = "dequantize"
    # accelerator-able (GEMM + ALU)
    CONV2D = "conv2d"
    DENSE = "dense"
    ADD = "add"
    # integer CPU ops
    DEPTHWISE = "depthwise_conv2d"
    RESCALE_ADD = "rescale_add"
    LUT = "lut"
    MEAN = "mean"
    INT8 = "int8"
    # float CPU fallback
    FLOAT = "float"


@dataclasses.dataclass(frozen=True)
class QNode:
    """One quantized op (module docstring). ``params`` names its weight/bias entries."""
    op: QOp
    src: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: str                      # "int8", "float32", or an integer / bool graph dtype
    exp: int | float | None = None  # int8 values: real = q * 2**-exp
    attrs: dict = dataclasses.field(default_factory=dict)
    params: tuple[str, ...] = ()
    name: str = ""
    target: str = "cpu"             # "cpu" or "vta" (set by ``partition``)
    zp: int = 0                     # int8 values: zero point, real = (q - zp) * 2**-exp

    def to_json(self) -> dict:
        return {"op": self.op.value, "src": list(self.src), "shape": list(self.shape),
                "dtype": self.dtype, "exp": self.exp, "attrs": _jsonable(self.attrs),
                "params": list(self.params), "name": self.name, "target": self.target, "zp": self.zp}

    @classmethod
    def from_json(cls, d: dict) -> "QNode":
        return cls(QOp(d["op"]), tuple(d["src"]), tuple(d["shape"]), d["dtype"], d["exp"],
                   _tuplify(d["attrs"]), tuple(d["params"]), d["name"], d["target"], d.get("zp", 0))


@dataclasses.dataclass
class QGraph:
    """Nodes in topological order; ``inputs``/``outputs`` are node indices."""
    nodes: list[QNode]
    inputs: list[int]
    outputs: list[int]
    output_names: list[str]
    params: dict[str, np.ndarray]

    def to_json(self) -> dict:
        return {"nodes": [n.to_json() for n in self.nodes], "inputs": self.inputs,
                "outputs": self.outputs, "output_names": self.output_names}

    @classmethod
    def from_json(cls, d: dict, params: Mapping[str, np.ndarray]) -> "QGraph":
        return cls([QNode.from_json(n) for n in d["nodes"]], list(d["inputs"]),
                   list(d["outputs"]), list(d["output_names"]), dict(params))

    def summary(self) -> str:
        def short(v):  # per-channel shifts and exponents: their range
            return f"{min(v)}..{max(v)}" if isinstance(v, tuple) and len(v) > 4 else v
        lines = []
        for i, n in enumerate(self.nodes):
            a = ", ".join(f"{k}={short(v)}" for k, v in n.attrs.items() if k != "attrs")
            lines.append(f"%{i} = {n.op.value}{'@' + n.target if n.target != 'cpu' else ''}"
                         f"({', '.join(f'%{s}' for s in n.src)}) {n.dtype}{list(n.shape)}"
                         f"{'' if n.exp is None else f' exp={n.exp}'}{f' zp={n.zp}' if n.zp else ''}"
                         f"{' ' + a if a else ''}")
        return "\n".join(lines)


def _jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


def _tuplify(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _tuplify(x) for k, x in v.items()}
    if isinstance(v, list):
        return tuple(_tuplify(x) for x in v)
    return v


def quantize_array(x: np.ndarray, exp: "int | float", zp: int = 0) -> np.ndarray:
    """float -> int8 at exponent ``exp`` and zero point ``zp``: clip(round_half_even(x * 2**exp)
    + zp); for a float ``exp`` (a model's scale) x / scale in float32, as onnxruntime's
    QuantizeLinear and the CPU kernel compute it."""
    if float(exp) != int(exp):     # onnxruntime's x / scale, in float32
        y = np.rint(np.asarray(x, np.float32) / np.float32(2.0 ** -exp))
    else:
        y = np.rint(np.asarray(x, np.float64) * 2.0 ** exp)
    return np.clip(y + zp, -128, 127).astype(np.int8)


def dequantize_array(q: np.ndarray, exp: "int | float", zp: int = 0) -> np.ndarray:
    """int8 ``q`` -> float32 ``(q - zp) * 2**-exp``."""
    return ((q.astype(np.float32) - np.float32(zp)) * np.float32(2.0 ** -exp)).astype(np.float32)


def _clip8(y: np.ndarray, relu: bool) -> np.ndarray:
    if relu:
        y = np.maximum(y, 0)
    return np.clip(y, -128, 127).astype(np.int8)


def eval_node(node: QNode, args: list[np.ndarray], params: Mapping[str, np.ndarray]) -> np.ndarray:
    """The value of ``node`` given its input values (integer semantics, module docstring)."""
    a = node.attrs
    op = node.op
    if op is QOp.QUANTIZE:
        return quantize_array(args[0], node.exp, node.zp)
    if op is QOp.DEQUANTIZE:
        return dequantize_array(args[0], a["src_exp"], a.get("src_zp", 0))
    if op in (QOp.CONV2D, QOp.DEPTHWISE) and a.get("pad_zp") is not None:   # zero-point pads
        (ph, pw), zp = a["padding"], a["pad_zp"]
        x = np.pad(args[0], ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=zp)
        plain = {k: v for k, v in a.items() if k != "pad_zp"}
        return eval_node(dataclasses.replace(node, attrs=dict(plain, padding=(0, 0))),
                         [x] + list(args[1:]), params)
    if op in (QOp.CONV2D, QOp.DEPTHWISE) and a.get("table") is not None:
        y = eval_node(dataclasses.replace(node, attrs={k: v for k, v in a.items() if k != "table"}),
                      args, params)
        return np.asarray(a["table"], np.int8)[y.astype(np.int32) + 128]
    if op in (QOp.CONV2D, QOp.DENSE, QOp.DEPTHWISE) and a.get("fscale") is not None:
        return ort_requant.requantize(_accumulate(node, args[0], params), a["fscale"],
                                      a["relu"], node.zp)
    if op is QOp.CONV2D:
        w, b = (params[p] for p in node.params)
        return conv2d_reference(args[0], w, b, a["strides"], a["padding"], a["shift"], a["relu"],
                                a.get("mult"), a.get("post", 15), node.zp)
    if op is QOp.DENSE:
        w, b = (params[p] for p in node.params)
        return conv2d_reference(args[0][:, :, None, None], w[:, :, None, None], b,
                                shift=a["shift"], relu=a["relu"], mult=a.get("mult"),
                                post=a.get("post", 15), zero=node.zp)[:, :, 0, 0]
    if op is QOp.ADD:
        return add_reference(args[0], args[1], a["la"], a["lb"], a["shift"], a["relu"])
    if op is QOp.DEPTHWISE:
        w, b = (params[p] for p in node.params)
        return depthwise_reference(args[0], w, b, a["strides"], a["padding"], a["shift"],
                                   a["relu"], a.get("mult"), a.get("post", 15), node.zp)
    if op is QOp.RESCALE_ADD:
        return ort_requant.add(args[0], args[1], a, node.zp)
    if op is QOp.LUT:
        return np.asarray(a["table"], np.int8)[args[0].astype(np.int32) + 128]
    if op is QOp.MEAN:
        x = args[0]
        axes = tuple(range(2, x.ndim))
        hw = int(np.prod([x.shape[i] for i in axes]))
        s = x.astype(np.int32).sum(axis=axes, keepdims=True)
        if a.get("fscale") is not None:
            return ort_requant.requantize(s - np.int32(a["zin"] * hw), a["fscale"], False, node.zp)
        return _clip8((s + hw // 2) // hw, False)
    if op is QOp.FLOAT and a["op"] == "PARAM":
        return np.asarray(params[node.params[0]])
    if op in (QOp.INT8, QOp.FLOAT):
        from compiler.graph.ops import Op
        from compiler.graph.registry import lookup
        y = lookup(Op[a["op"]]).compute(list(args), dict(a["attrs"]))
        return np.asarray(y, node.dtype)
    raise ValueError(f"eval_node: op {op!r} has no CPU implementation here")


def depthwise_reference(x: np.ndarray, w: np.ndarray, bias, strides, padding, shift, relu,
                        mult=None, post: int = 15, zero: int = 0) -> np.ndarray:
    """Depthwise int8 conv: NCHW ``x`` int8, ``w`` (C, 1, KH, KW) int8, ``bias`` (C,) int32,
    symmetric zero ``padding`` (ph, pw); int32 accumulation then ``layout.requantize``."""
    acc = conv_accumulate(x, w, bias, strides, padding, depthwise=True)
    return requantize(acc, shift, relu, mult, post, zero)


def conv_accumulate(x: np.ndarray, w: np.ndarray, bias, strides=(1, 1), padding=(0, 0), *,
                    depthwise: bool = False) -> np.ndarray:
    """int32 accumulators ``sum x * w + bias`` (wrapping as int32) of an int8 conv: NCHW
    ``x``, OIHW ``w`` (depthwise: (C, 1, KH, KW)), ``bias`` (O,), zero ``padding`` (ph, pw)
    on both sides. Returns [N, O, OH, OW] int32."""
    (sh, sw), (ph, pw) = strides, padding
    N, C, H, W = x.shape
    O, _, KH, KW = w.shape
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    OH, OW = (H + 2 * ph - KH) // sh + 1, (W + 2 * pw - KW) // sw + 1
    acc = np.zeros((N, O, OH, OW), np.int64) + np.asarray(bias, np.int64)[None, :, None, None]
    w64 = w.astype(np.int64)
    for kh in range(KH):
        for kw in range(KW):
            patch = xp[:, :, kh:kh + sh * (OH - 1) + 1:sh, kw:kw + sw * (OW - 1) + 1:sw]
            if depthwise:
                acc += patch * w64[:, 0, kh, kw][None, :, None, None]
            else:
                acc += np.einsum("nchw,oc->nohw", patch, w64[:, :, kh, kw])
    return ((acc + 2**31) % 2**32 - 2**31).astype(np.int32)


def _accumulate(node: QNode, x: np.ndarray, params) -> np.ndarray:
    """The int32 accumulators of a CONV2D, DENSE or DEPTHWISE node on input ``x``."""
    w, b = (params[p] for p in node.params)
    a = node.attrs
    if node.op is QOp.DENSE:
        return conv_accumulate(x[:, :, None, None], w[:, :, None, None], b)[:, :, 0, 0]
    return conv_accumulate(x, w, b, a["strides"], a["padding"],
                           depthwise=node.op is QOp.DEPTHWISE)


def run(qg: QGraph, inputs: Mapping[str, np.ndarray], *, keep: bool = False,
        override: Mapping[int, Any] | None = None):
    """Run the quantized graph in numpy: the bit-exactness oracle.

    Args:
        inputs: graph input name -> float array of the input's shape.
        keep: return every node's value (a list by node index) instead of the outputs.
        override: node index -> function ``(node, args) -> value`` used instead of
            ``eval_node`` (the accelerator runtime plugs its device in here).

    Returns:
        list of output arrays (or of every value with ``keep``).
    """
    vals: list[np.ndarray | None] = [None] * len(qg.nodes)
    for i, n in enumerate(qg.nodes):
        if n.op is QOp.INPUT:
            if n.name not in inputs:
                raise KeyError(f"input {n.name!r} not given; inputs: {sorted(inputs)}")
            x = np.asarray(inputs[n.name]).astype(n.dtype, copy=False)
            if x.shape != n.shape:
                raise ValueError(f"input {n.name!r} has shape {list(x.shape)}, the quantized graph "
                                 f"expects {list(n.shape)}")
            vals[i] = x
            continue
        args = [vals[s] for s in n.src]
        fn = override.get(i) if override else None
        vals[i] = fn(n, args) if fn else eval_node(n, args, qg.params)
    return vals if keep else [vals[o] for o in qg.outputs]
