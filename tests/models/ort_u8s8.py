"""Where onnxruntime's QLinearConv is not exact, and the exact result to test against there.

onnxruntime's MLAS multiplies uint8 activations by int8 weights on x86 with ``vpdpbusd``
(int32 sums, exact) where the CPU has AVX512-VNNI or AVX-VNNI, and otherwise with
``vpmaddubsw``, which adds the products of two neighbouring bytes into int16 with
saturation before ``vpmaddwd`` widens them to int32 (Intel SDM, PMADDUBSW). onnxruntime
documents the resulting overflow on such CPUs (docs "Quantize ONNX models", "when and why
to use reduce_range"). For QLinearConv with symmetric weights the neighbouring bytes are
two adjacent input channels at one kernel position (the NHWC activations of MLAS's
``MlasConvSym`` kernels), products of the raw uint8 input and int8 weight; the zero points
are corrected in int32 afterwards.

:func:`ort_run_exact` gives onnxruntime's outputs where it computes exactly and
the exact ones (int32 accumulation, then onnxruntime's requantization, as
``compiler.quant.ort_requant`` states it) where it saturates; there it first checks that
onnxruntime's outputs are the saturating model's, so the exception holds only for that
cause. Supported: 2-D QLinearConv, group 1, per-tensor input and output quantization,
per-tensor or per-channel weights, uint8 input and output.

For whole models, where the saturating pairs cannot be found without onnxruntime's
intermediate tensors, :func:`exact_session` gives onnxruntime's own exact results: on a
CPU without VNNI it runs the model with its int8 weights stored as uint8
(:func:`uint8_weights`), which onnxruntime multiplies with u8 x u8 kernels that widen
both operands to int16 before ``vpmaddwd`` (no saturation); the requantization is the same,
so the outputs equal the u8 x s8 ones wherever those are exact (tested in
``tests/compiler/frontend/test_qlinear_conv_saturation.py``).
"""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

from compiler.quant.ort_requant import conv_ratio
from driver.runtime.cpu_features import host_cpu_flags
from tests.models.oracle import ort_run

#: /proc/cpuinfo flags that give MLAS an exact (``vpdpbusd``) u8 x s8 kernel
VNNI_FLAGS = ("avx512_vnni", "avx_vnni")
INT16 = (-(2 ** 15), 2 ** 15 - 1)


def host_has_vnni() -> bool:
    """True where this machine has AVX512-VNNI or AVX-VNNI (``/proc/cpuinfo``)."""
    return any(f in host_cpu_flags() for f in VNNI_FLAGS)


def qlinear_conv_args(model: onnx.ModelProto, feeds: dict) -> "dict | None":
    """The inputs and attributes of ``model`` if it is one QLinearConv node, else None."""
    nodes = model.graph.node
    if len(nodes) != 1 or nodes[0].op_type != "QLinearConv":
        return None
    node = nodes[0]
    values = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer} | feeds
    names = ("x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b")
    args = {k: values.get(n) for k, n in zip(names, list(node.input) + [""] * 9)}
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    if attrs.get("group", 1) != 1 or args["x"].ndim != 4 or args["x"].dtype != np.uint8:
        raise ValueError(f"ort_run_exact covers 2-D, group-1, uint8 QLinearConv, not "
                         f"group {attrs.get('group', 1)}, input {args['x'].dtype} "
                         f"{args['x'].shape}; extend tests/models/ort_u8s8.py for it")
    if "auto_pad" in attrs:
        raise ValueError("ort_run_exact takes explicit pads, not auto_pad "
                         f"{attrs['auto_pad']!r}; write the pads into the case")
    args.update(strides=attrs.get("strides", [1, 1]), pads=attrs.get("pads", [0, 0, 0, 0]),
                dilations=attrs.get("dilations", [1, 1]))
    return args


def _windows(a: dict) -> np.ndarray:
    """The input's receptive fields as int64 [N, OH, OW, KH, KW, C], padded with x's zero
    point (as onnxruntime pads)."""
    x = a["x"].astype(np.int64)
    (t, l, b, r), (sh, sw), (dh, dw) = a["pads"], a["strides"], a["dilations"]
    xp = np.pad(x, ((0, 0), (0, 0), (t, b), (l, r)), constant_values=int(a["xz"]))
    kh, kw = a["w"].shape[2:]
    oh = (xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
    rows = (np.arange(oh) * sh)[:, None] + np.arange(kh) * dh          # [OH, KH]
    cols = (np.arange(ow) * sw)[:, None] + np.arange(kw) * dw          # [OW, KW]
    win = xp[:, :, rows[:, None, :, None], cols[None, :, None, :]]     # [N, C, OH, OW, KH, KW]
    return win.transpose(0, 2, 3, 4, 5, 1)


def _pair_sums(win: np.ndarray, w: np.ndarray) -> np.ndarray:
    """u8 x s8 products summed over neighbouring input channels (MLAS's ``vpmaddubsw``
    pairs): int64 [N, OH, OW, O, KH, KW, ceil(C / 2)]."""
    c = win.shape[-1]
    if c % 2:
        win = np.concatenate([win, np.zeros_like(win[..., :1])], axis=-1)
        w = np.concatenate([w, np.zeros_like(w[:, :1])], axis=1)
    wt = w.astype(np.int64).transpose(0, 2, 3, 1)                       # [O, KH, KW, C]
    prod = win[:, :, :, None] * wt[None, None, None]                    # [N, OH, OW, O, KH, KW, C]
    return prod[..., 0::2] + prod[..., 1::2]


def _requantize(dot: np.ndarray, win: np.ndarray, a: dict) -> np.ndarray:
    """sum(x * w) int64 [N, OH, OW, O] -> uint8 NCHW: the zero-point corrections and bias in
    int32, then onnxruntime's float32 requantization (``ort_requant`` module docstring)."""
    w = a["w"].astype(np.int64)
    o = w.shape[0]
    xz, wz = int(a["xz"]), np.broadcast_to(np.asarray(a["wz"], np.int64), (o,))
    k = w[0].size
    acc = (dot - xz * w.reshape(o, -1).sum(1) - wz * win.sum((3, 4, 5))[..., None]
           + k * xz * wz)
    if a["b"] is not None:
        acc = acc + a["b"].astype(np.int64)
    acc = acc.astype(np.int32).transpose(0, 3, 1, 2)
    m = np.broadcast_to(conv_ratio(a["xs"], a["ws"], a["ys"]), (o,)).reshape(1, o, 1, 1)
    y = np.rint(acc.astype(np.float32) * m).astype(np.float64) + int(a["yz"])
    return np.clip(y, 0, 255).astype(np.uint8)


def qlinear_conv_exact(a: dict) -> np.ndarray:
    """QLinearConv with int32 accumulation: uint8 [N, O, OH, OW]."""
    win = _windows(a)
    dot = _pair_sums(win, a["w"]).sum((4, 5, 6))
    return _requantize(dot, win, a)


def qlinear_conv_saturating(a: dict) -> np.ndarray:
    """QLinearConv as MLAS computes it without VNNI: each pair sum clipped to int16."""
    win = _windows(a)
    dot = np.clip(_pair_sums(win, a["w"]), *INT16).sum((4, 5, 6))
    return _requantize(dot, win, a)


def saturates(a: dict) -> bool:
    """True where some pair sum of ``a``'s QLinearConv lies outside int16."""
    p = _pair_sums(_windows(a), a["w"])
    return bool(p.min() < INT16[0] or p.max() > INT16[1])


def ort_run_exact(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    """onnxruntime's outputs of ``model``, except for a QLinearConv that onnxruntime
    computes with int16 saturation on this machine (no VNNI, some pair sum outside int16):
    then the exact result, after asserting that onnxruntime's equals
    :func:`qlinear_conv_saturating` (anything else is a real disagreement)."""
    got = ort_run(model, feeds)
    a = qlinear_conv_args(model, feeds)
    if a is None or host_has_vnni() or not saturates(a):
        return got
    np.testing.assert_array_equal(
        got[0], qlinear_conv_saturating(a),
        err_msg="onnxruntime's QLinearConv differs from its int16-saturating model")
    return [qlinear_conv_exact(a)]


def uint8_weights(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with every int8 initializer that a DequantizeLinear, or a QLinearConv's or
    QLinearMatMul's weight input on uint8 activations, reads stored as uint8 ``q + 128``
    with zero point ``z + 128``: the same real values (``(q + 128) - (z + 128) = q - z``),
    which onnxruntime multiplies with its exact u8 x u8 kernels (int16 operands,
    ``vpmaddwd``) and requantizes as before."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    inits = {t.name: t for t in out.graph.initializer}
    slots = {"DequantizeLinear": (0, 2), "QLinearConv": (3, 5), "QLinearMatMul": (3, 5)}
    for node in out.graph.node:
        q_at, z_at = slots.get(node.op_type, (None, None))
        if q_at is None or inits.get(node.input[q_at]) is None:
            continue
        q = numpy_helper.to_array(inits[node.input[q_at]])
        x_zero = inits.get(node.input[2]) if node.op_type != "DequantizeLinear" else None
        if q.dtype != np.int8 or (x_zero is not None
                                  and x_zero.data_type != onnx.TensorProto.UINT8):
            continue   # a QLinear op on int8 activations has no int8 x uint8 kernel
        z = (numpy_helper.to_array(inits[node.input[z_at]])
             if len(node.input) > z_at and node.input[z_at] else np.zeros((), np.int8))
        for at, v in ((q_at, q), (z_at, z)):
            name = f"{node.name or node.output[0]}_u8_{at}"
            out.graph.initializer.append(numpy_helper.from_array(
                (v.astype(np.int16) + 128).astype(np.uint8), name))
            while len(node.input) <= at:
                node.input.append("")
            node.input[at] = name
    used = {i for n in out.graph.node for i in n.input}
    keep = [t for t in out.graph.initializer if t.name in used]
    del out.graph.initializer[:]
    out.graph.initializer.extend(keep)
    return out


def _config(options: ort.SessionOptions, key: str) -> "str | None":
    """The session config entry ``key`` of ``options``, None where unset."""
    try:
        return options.get_session_config_entry(key)
    except RuntimeError:   # onnxruntime raises for a key never set
        return None


def exact_session(model: onnx.ModelProto, options=None) -> ort.InferenceSession:
    """An onnxruntime CPU session of ``model`` that accumulates int8 products exactly on
    every x86 CPU: on one without VNNI, of :func:`uint8_weights` (same outputs wherever
    its u8 x s8 kernels do not saturate), else of ``model`` itself. Not rewritten under
    ``session.qdqisint8allowed=1``: int8 activations with uint8 weights fail onnxruntime's
    QDQ selectors, which would run those convs in float."""
    options = options or ort.SessionOptions()
    if not host_has_vnni() and _config(options, "session.qdqisint8allowed") != "1":
        model = uint8_weights(model)
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])
