"""Train a small CNN on scikit-learn's 8x8 handwritten digits in plain numpy and export it to ONNX.

Model (NCHW, float32): image[batch,1,8,8] (pixel / 16)
    Conv 1->8, 3x3, pad 1 -> Relu -> Conv 8->16, 3x3, stride 2, pad 1 -> Relu
    -> Flatten [batch,256] -> Gemm 256->10 (logits)
Training: cross-entropy, Adam (lr 3e-3), batch 32, 40 epochs, seed 0; about
15 s of CPU time (40 s wall on a busy 2-core machine). The train/held-out
split is fixed by the seed: 20 % of the 1797 images (359) are held out and
never trained on.

Rerun (from the repository root; needs numpy, onnx, scikit-learn only):
    python examples/digits/train.py
It rewrites examples/digits/digits_cnn.onnx, examples/digits/calib.npz (180
training images for int8 calibration) and examples/digits/heldout.npz
(held-out indices into load_digits(), their images as uint8 0..16, labels)
and prints the held-out accuracy (numpy forward pass and onnxruntime when it
is installed).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from numpy.lib.stride_tricks import sliding_window_view
from onnx import TensorProto, helper, numpy_helper
from sklearn.datasets import load_digits

HERE = Path(__file__).resolve().parent
SEED, EPOCHS, BATCH, LR = 0, 40, 32, 3e-3


def split(n: int, seed: int = SEED, held_out: float = 0.2) -> tuple[np.ndarray, np.ndarray]:
    """Fixed permutation split -> (train indices, held-out indices), each sorted."""
    perm = np.random.default_rng(seed).permutation(n)
    k = int(n * held_out)
    return np.sort(perm[k:]), np.sort(perm[:k])


def im2col(x: np.ndarray, k: int, stride: int, pad: int) -> np.ndarray:
    """x[N,C,H,W] -> cols[N,OH,OW,C*k*k] (channel-major, as the OIHW weight flattens)."""
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = sliding_window_view(xp, (k, k), axis=(2, 3))[:, :, ::stride, ::stride]  # N,C,OH,OW,k,k
    n, c, oh, ow = win.shape[:4]
    return win.transpose(0, 2, 3, 1, 4, 5).reshape(n, oh, ow, c * k * k)


def col2im(dcols: np.ndarray, shape, k: int, stride: int, pad: int) -> np.ndarray:
    """Adjoint of im2col: scatter-add column gradients back to x[N,C,H,W]."""
    n, c, h, w = shape
    _, oh, ow, _ = dcols.shape
    d = dcols.reshape(n, oh, ow, c, k, k)
    dx = np.zeros((n, c, h + 2 * pad, w + 2 * pad), dcols.dtype)
    for i in range(k):
        for j in range(k):
            dx[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride] += d[:, :, :, :, i, j].transpose(0, 3, 1, 2)
    return dx[:, :, pad:pad + h, pad:pad + w]


class CNN:
    LAYERS = (("c1", 1, 8, 1), ("c2", 8, 16, 2))  # name, cin, cout, stride; 3x3, pad 1

    def __init__(self, rng: np.random.Generator):
        self.p = {}
        for name, cin, cout, _ in self.LAYERS:
            self.p[name + "_w"] = (rng.standard_normal((cout, cin, 3, 3)) * np.sqrt(2 / (cin * 9))).astype(np.float32)
            self.p[name + "_b"] = np.zeros(cout, np.float32)
        self.p["fc_w"] = (rng.standard_normal((10, 256)) * np.sqrt(1 / 256)).astype(np.float32)
        self.p["fc_b"] = np.zeros(10, np.float32)

    def forward(self, x: np.ndarray):
        cache, h = [], x
        for name, cin, cout, s in self.LAYERS:
            cols = im2col(h, 3, s, 1)
            z = cols @ self.p[name + "_w"].reshape(cout, -1).T + self.p[name + "_b"]
            cache.append((h.shape, cols, z))
            h = np.maximum(z, 0).transpose(0, 3, 1, 2)
        flat = h.reshape(len(x), -1)
        return flat @ self.p["fc_w"].T + self.p["fc_b"], (cache, flat)

    def backward(self, dlogits: np.ndarray, state) -> dict[str, np.ndarray]:
        cache, flat = state
        g = {"fc_w": dlogits.T @ flat, "fc_b": dlogits.sum(0)}
        dh = (dlogits @ self.p["fc_w"]).reshape(len(flat), 16, 4, 4)
        for (name, cin, cout, s), (shape, cols, z) in zip(reversed(self.LAYERS), reversed(cache)):
            dz = dh.transpose(0, 2, 3, 1) * (z > 0)
            g[name + "_w"] = (dz.reshape(-1, cout).T @ cols.reshape(-1, cols.shape[-1])).reshape(cout, cin, 3, 3)
            g[name + "_b"] = dz.reshape(-1, cout).sum(0)
            dh = col2im(dz @ self.p[name + "_w"].reshape(cout, -1), shape, 3, s, 1)
        return g


def train(x: np.ndarray, y: np.ndarray) -> CNN:
    rng = np.random.default_rng(SEED)
    model = CNN(rng)
    m = {k: np.zeros_like(v) for k, v in model.p.items()}
    v = {k: np.zeros_like(t) for k, t in model.p.items()}
    step = 0
    for epoch in range(EPOCHS):
        order = rng.permutation(len(x))
        for i in range(0, len(x), BATCH):
            idx = order[i:i + BATCH]
            logits, state = model.forward(x[idx])
            p = np.exp(logits - logits.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            p[np.arange(len(idx)), y[idx]] -= 1
            grads = model.backward(p / len(idx), state)
            step += 1
            for k, gk in grads.items():  # Adam (Kingma & Ba 2015)
                m[k] = 0.9 * m[k] + 0.1 * gk
                v[k] = 0.999 * v[k] + 0.001 * gk * gk
                mh, vh = m[k] / (1 - 0.9 ** step), v[k] / (1 - 0.999 ** step)
                model.p[k] -= (LR * mh / (np.sqrt(vh) + 1e-8)).astype(np.float32)
    return model


def export(model: CNN, path: Path) -> onnx.ModelProto:
    """ONNX (opset 13) with a dynamic batch dimension named 'batch'."""
    p = model.p
    inits = [numpy_helper.from_array(v, k) for k, v in p.items()]
    nodes = [
        helper.make_node("Conv", ["image", "c1_w", "c1_b"], ["h1"], name="conv1", kernel_shape=[3, 3], pads=[1] * 4),
        helper.make_node("Relu", ["h1"], ["a1"], name="relu1"),
        helper.make_node("Conv", ["a1", "c2_w", "c2_b"], ["h2"], name="conv2", kernel_shape=[3, 3], pads=[1] * 4,
                         strides=[2, 2]),
        helper.make_node("Relu", ["h2"], ["a2"], name="relu2"),
        helper.make_node("Flatten", ["a2"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], name="fc", transB=1),
    ]
    graph = helper.make_graph(nodes, "digits_cnn",
                              [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 1, 8, 8])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])], inits)
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                                   producer_name="examples/digits/train.py")
    onnx_model.ir_version = 8
    onnx.checker.check_model(onnx_model)
    onnx.save(onnx_model, path)
    return onnx_model


#: Training images saved for int8 calibration (``vta compile --target vta --calibrate``).
CALIB_IMAGES = 180


def main() -> None:
    digits = load_digits()
    images = digits.images.astype(np.float32)[:, None] / 16.0
    labels = digits.target.astype(np.int64)
    tr, ho = split(len(images))
    model = train(images[tr], labels[tr])
    acc = (model.forward(images[ho])[0].argmax(1) == labels[ho]).mean()
    onnx_model = export(model, HERE / "digits_cnn.onnx")
    np.savez_compressed(HERE / "heldout.npz", indices=ho, images=digits.images[ho].astype(np.uint8),
                        labels=labels[ho])
    calib = tr[:CALIB_IMAGES]
    np.savez_compressed(HERE / "calib.npz", indices=calib,
                        images=digits.images[calib].astype(np.uint8))
    print(f"held-out accuracy (numpy): {acc:.4f} on {len(ho)} images")
    try:
        import onnxruntime as ort
        sess = ort.InferenceSession(onnx_model.SerializeToString(), providers=["CPUExecutionProvider"])
        pred = sess.run(None, {"image": images[ho]})[0].argmax(1)
        print(f"held-out accuracy (onnxruntime): {(pred == labels[ho]).mean():.4f}")
    except ImportError:
        pass


if __name__ == "__main__":
    main()
