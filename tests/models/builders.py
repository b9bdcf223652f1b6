"""Seeded ONNX model builders (onnx.helper only): ResNet-18, MobileNetV2, a BERT encoder layer.

Each `build_*` returns an `onnx.ModelProto` with random weights from
`numpy.random.default_rng(seed)`; BatchNormalization nodes carry random
statistics so batch-norm folding is exercised. Input "input" is float32
[1, 3, size, size] for the CNNs, [1, seq, hidden] for BERT.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class OnnxBuilder:
    """Accumulates nodes and initializers; each helper returns its output tensor name."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._count: dict[str, int] = {}

    def fresh(self, prefix: str) -> str:
        k = self._count.get(prefix, 0)
        self._count[prefix] = k + 1
        return f"{prefix}{k}"

    def const(self, value: np.ndarray, prefix: str = "c") -> str:
        name = self.fresh(prefix)
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op: str, inputs: list[str], n_out: int = 1, **attrs):
        name = self.fresh(op.lower())
        outs = [f"{name}_out{i}" if n_out > 1 else f"{name}_out" for i in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=name, **attrs))
        return outs if n_out > 1 else outs[0]

    def randn(self, *shape, std=1.0) -> np.ndarray:
        return (self.rng.standard_normal(shape) * std).astype(np.float32)

    def conv(self, x, cin, cout, k, stride=1, groups=1, bias=False):
        w = self.randn(cout, cin // groups, k, k, std=np.sqrt(2.0 / (cin // groups * k * k)))
        ins = [x, self.const(w, "w")] + ([self.const(self.randn(cout, std=0.1), "b")] if bias else [])
        return self.node("Conv", ins, kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4, group=groups)

    def bn(self, x, c):
        r = self.rng
        params = [r.uniform(0.5, 1.5, c), r.normal(0, 0.1, c), r.normal(0, 0.1, c), r.uniform(0.5, 1.5, c)]
        return self.node("BatchNormalization", [x] + [self.const(p.astype(np.float32), "bn") for p in params],
                         epsilon=1e-5)

    def dense(self, x, k, n, transb=True):
        w = self.randn(n, k, std=np.sqrt(1.0 / k))
        return self.node("Gemm", [x, self.const(w if transb else w.T.copy(), "fc"),
                                  self.const(self.randn(n, std=0.1), "fcb")], transB=int(transb))

    def model(self, inputs, outputs, opset: int) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, "model", inputs, outputs, self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8 if opset <= 18 else 10
        return m


def _io(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def build_resnet18(size: int = 224, seed: int = 0, classes: int = 1000, opset: int = 13) -> onnx.ModelProto:
    """ResNet-18 (He et al. 2015, torchvision layout): conv7x7/2-BN-ReLU-maxpool, 4 stages x 2 BasicBlocks."""
    b = OnnxBuilder(seed)
    x = b.node("Relu", [b.bn(b.conv("input", 3, 64, 7, 2), 64)])
    x = b.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for stage, cout in enumerate((64, 128, 256, 512)):
        for block in range(2):
            stride = 2 if stage > 0 and block == 0 else 1
            y = b.node("Relu", [b.bn(b.conv(x, cin, cout, 3, stride), cout)])
            y = b.bn(b.conv(y, cout, cout, 3), cout)
            short = b.bn(b.conv(x, cin, cout, 1, stride), cout) if (stride != 1 or cin != cout) else x
            x = b.node("Relu", [b.node("Add", [y, short])])
            cin = cout
    x = b.node("Flatten", [b.node("GlobalAveragePool", [x])], axis=1)
    out = b.dense(x, 512, classes)
    return b.model([_io("input", [1, 3, size, size])], [_io(out, None)], opset)


def build_mobilenet_v2(size: int = 224, seed: int = 0, classes: int = 1000, opset: int = 13) -> onnx.ModelProto:
    """MobileNetV2 (Sandler et al. 2018): inverted residuals with depthwise convs and ReLU6 (Clip 0..6)."""
    b = OnnxBuilder(seed)
    lo, hi = b.const(np.float32(0.0), "clip"), b.const(np.float32(6.0), "clip")
    relu6 = lambda t: b.node("Clip", [t, lo, hi])  # noqa: E731
    x = relu6(b.bn(b.conv("input", 3, 32, 3, 2), 32))
    cin = 32
    for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                       (6, 160, 3, 2), (6, 320, 1, 1)):
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t
            y = x if t == 1 else relu6(b.bn(b.conv(x, cin, hidden, 1), hidden))
            y = relu6(b.bn(b.conv(y, hidden, hidden, 3, stride, groups=hidden), hidden))
            y = b.bn(b.conv(y, hidden, c, 1), c)
            x = b.node("Add", [x, y]) if stride == 1 and cin == c else y
            cin = c
    x = relu6(b.bn(b.conv(x, cin, 1280, 1), 1280))
    x = b.node("Flatten", [b.node("GlobalAveragePool", [x])], axis=1)
    out = b.dense(x, 1280, classes)
    return b.model([_io("input", [1, 3, size, size])], [_io(out, None)], opset)


def build_bert_layer(seq: int = 32, hidden: int = 256, heads: int = 4, ffn: int = 1024, seed: int = 0,
                     opset: int = 20) -> onnx.ModelProto:
    """One BERT encoder layer (Devlin et al. 2018): multi-head self-attention + GELU FFN, post-LayerNorm."""
    b = OnnxBuilder(seed)
    dh = hidden // heads

    def linear(t, k, n):
        w = b.const(b.randn(k, n, std=np.sqrt(1.0 / k)), "w")
        return b.node("Add", [b.node("MatMul", [t, w]), b.const(b.randn(n, std=0.1), "b")])

    def split_heads(t):
        r = b.node("Reshape", [t, b.const(np.array([1, seq, heads, dh], np.int64), "shape")])
        return b.node("Transpose", [r], perm=[0, 2, 1, 3])

    def layer_norm(t):
        return b.node("LayerNormalization", [t, b.const(b.rng.uniform(0.5, 1.5, hidden).astype(np.float32), "g"),
                                             b.const(b.randn(hidden, std=0.1), "beta")], axis=-1, epsilon=1e-12)

    q, k, v = (split_heads(linear("input", hidden, hidden)) for _ in range(3))
    scores = b.node("Div", [b.node("MatMul", [q, b.node("Transpose", [k], perm=[0, 1, 3, 2])]),
                            b.const(np.float32(np.sqrt(dh)), "scale")])
    mask = np.zeros((1, 1, 1, seq), np.float32)
    mask[..., seq - seq // 8:] = -10000.0  # padded positions
    probs = b.node("Softmax", [b.node("Add", [scores, b.const(mask, "mask")])], axis=-1)
    ctx = b.node("Transpose", [b.node("MatMul", [probs, v])], perm=[0, 2, 1, 3])
    ctx = b.node("Reshape", [ctx, b.const(np.array([1, seq, hidden], np.int64), "shape")])
    x = layer_norm(b.node("Add", [linear(ctx, hidden, hidden), "input"]))
    h = b.node("Gelu", [linear(x, hidden, ffn)])
    out = layer_norm(b.node("Add", [linear(h, ffn, hidden), x]))
    return b.model([_io("input", [1, seq, hidden])], [_io(out, None)], opset)


def build_token_encoder(seq: int = 8, vocab: int = 50, hidden: int = 32, heads: int = 2, ffn: int = 64,
                        seed: int = 0, opset: int = 13) -> onnx.ModelProto:
    """A tiny BERT-style encoder over token ids, as exporters write it: inputs "input_ids" int64
    [1, seq] and "attention_mask" int64 [1, seq] (1: token, 0: padding); word + position
    embeddings (Gather on int64 ids), embedding LayerNorm, one attention layer whose mask is
    (1 - Cast(mask)) * -10000 added to the scores, Softmax, GELU FFN, post-LayerNorm. Output
    float32 [1, seq, hidden]."""
    b = OnnxBuilder(seed)
    dh = hidden // heads

    def linear(t, k, n):
        w = b.const(b.randn(k, n, std=np.sqrt(1.0 / k)), "w")
        return b.node("Add", [b.node("MatMul", [t, w]), b.const(b.randn(n, std=0.1), "b")])

    def heads_of(t):
        r = b.node("Reshape", [t, b.const(np.array([1, seq, heads, dh], np.int64), "shape")])
        return b.node("Transpose", [r], perm=[0, 2, 1, 3])

    def layer_norm(t):
        return b.node("LayerNormalization", [t, b.const(b.rng.uniform(0.5, 1.5, hidden).astype(np.float32), "g"),
                                             b.const(b.randn(hidden, std=0.1), "beta")], axis=-1, epsilon=1e-12)

    words = b.node("Gather", [b.const(b.randn(vocab, hidden), "wemb"), "input_ids"])
    positions = b.const(np.arange(seq, dtype=np.int64).reshape(1, seq), "pos")
    x = layer_norm(b.node("Add", [words, b.node("Gather", [b.const(b.randn(seq, hidden), "pemb"), positions])]))
    mask = b.node("Cast", [b.node("Unsqueeze", ["attention_mask", b.const(np.array([1, 2], np.int64), "axes")])],
                  to=TensorProto.FLOAT)
    bias = b.node("Mul", [b.node("Sub", [b.const(np.float32(1.0), "one"), mask]), b.const(np.float32(-10000.0), "big")])
    q, k, v = (heads_of(linear(x, hidden, hidden)) for _ in range(3))
    scores = b.node("Div", [b.node("MatMul", [q, b.node("Transpose", [k], perm=[0, 1, 3, 2])]),
                            b.const(np.float32(np.sqrt(dh)), "scale")])
    probs = b.node("Softmax", [b.node("Add", [scores, bias])], axis=-1)
    ctx = b.node("Transpose", [b.node("MatMul", [probs, v])], perm=[0, 2, 1, 3])
    ctx = b.node("Reshape", [ctx, b.const(np.array([1, seq, hidden], np.int64), "shape")])
    x = layer_norm(b.node("Add", [linear(ctx, hidden, hidden), x]))
    h = b.node("Gelu" if opset >= 20 else "Relu", [linear(x, hidden, ffn)])
    out = layer_norm(b.node("Add", [linear(h, ffn, hidden), x]))
    ids = [helper.make_tensor_value_info(n, TensorProto.INT64, [1, seq]) for n in ("input_ids", "attention_mask")]
    return b.model(ids, [_io(out, None)], opset)


def build_upsample_concat(size: int = 16, seed: int = 0, opset: int = 13,
                          repeat_names: bool = True) -> onnx.ModelProto:
    """A small U-Net-like CNN: conv stem, a stride-2 conv, nearest Resize x2, Concat with
    the skip branch, a conv, a residual Add + ReLU and a 1x1 head; input "input" float32
    [1, 3, size, size], output [1, 8, size, size] listed twice.

    With ``repeat_names`` every Conv is named "conv", every Relu "relu" and the rest ""
    (the ONNX checker allows repeated and empty node names; onnxruntime refuses repeated
    ones, so compare against it with ``repeat_names=False``). The MaxPool (1x1, a no-op)
    leaves its optional Indices output unnamed ("").
    """
    b = OnnxBuilder(seed)
    relu = lambda t: b.node("Relu", [t])  # noqa: E731
    stem = relu(b.conv("input", 3, 16, 3, bias=True))
    skip = relu(b.conv(stem, 16, 32, 3, bias=True))
    pooled = b.fresh("maxpool_out")
    b.nodes.append(helper.make_node("MaxPool", [skip], [pooled, ""], name=b.fresh("maxpool"),
                                    kernel_shape=[1, 1]))
    down = relu(b.conv(pooled, 32, 32, 3, stride=2, bias=True))
    scales = b.const(np.array([1, 1, 2, 2], np.float32), "scales")
    up = b.node("Resize", [down, "", scales], mode="nearest")
    cat = b.node("Concat", [up, skip], axis=1)
    y = b.conv(cat, 64, 32, 3, bias=True)
    y = relu(b.node("Add", [y, skip]))
    out = b.conv(y, 32, 8, 1, bias=True)
    if repeat_names:
        for n in b.nodes:
            n.name = {"Conv": "conv", "Relu": "relu"}.get(n.op_type, "")
    shape = [1, 8, size, size]
    return b.model([_io("input", [1, 3, size, size])], [_io(out, shape), _io(out, shape)], opset)
