"""
A whole model on the accelerator
================================

From Python, as VTA's "Deploy a Pretrained Model" tutorial does from TVM:
quantize a model to int8, split it between the accelerator and the CPU, build
one module, load it on the cycle-accurate simulator and run it. First the
digits CNN that ships in ``examples/digits`` (with held-out images to score),
then ResNet-18 at 32 x 32 pixels (seeded random weights; a real model is an
``.onnx`` file given the same way).

Run it from the repository root with ``python tutorials/deploy_model.py``
(about ten seconds).
"""
# %%
import sys
from pathlib import Path

import numpy as np

from compiler import build_model
from compiler.quant import run as run_int8
from driver.runtime import load_module

ROOT = Path(__file__).resolve().parents[1]
DIGITS = ROOT / "examples" / "digits"

# %%
# The digits CNN
# --------------
# ``calib`` holds samples the quantizer picks each tensor's scale from; the
# module is compiled for the batch in ``input_shapes``.
heldout = np.load(DIGITS / "heldout.npz")
images = (heldout["images"].reshape(-1, 1, 8, 8) / 16).astype(np.float32)
calib = (np.load(DIGITS / "calib.npz")["images"].reshape(-1, 1, 8, 8) / 16).astype(np.float32)
digits = build_model(str(DIGITS / "digits_cnn.onnx"), target="vta",
                     input_shapes={"image": (1, 1, 8, 8)}, config="1x16_i8w8a32_15_15_18_17",
                     calib={"image": calib}, per_channel=True)
m = load_module(digits, device="tsim")
n = 30
hits = sum(int(np.argmax(m(images[i:i + 1])[0]) == heldout["labels"][i]) for i in range(n))
st = m.stats()
print(f"digits: {hits} of {n} held-out images right; {st['cycles']} cycles over {n} runs, "
      f"GEMM utilization {st['gemm_utilization']:.1%}")
for name, layer in st["layers"].items():
    print(f"  {name:20} {layer['runs']:>3} runs {layer['cycles']:>9} cycles")
assert hits >= 0.8 * n

# %%
# ResNet-18 at 32 x 32
# --------------------
# Every conv but the 3-channel stem, the residual adds and the dense layer run
# on the accelerator; the stem, pooling and the float steps on the CPU. The
# input is standard normal, so the calibration samples are too: 32 of them,
# enough to reach the tails (with 4, a value of a new input beyond the
# calibrated [-4, 4) saturates, and ``load_module`` warns about it).
sys.path.insert(0, str(ROOT))
from tests.models.builders import build_resnet18  # noqa: E402  (a seeded ONNX ResNet-18)

rng = np.random.default_rng(0)
resnet = build_model(build_resnet18(size=32, seed=0), target="vta",
                     input_shapes={"input": (1, 3, 32, 32)},
                     calib={"input": rng.standard_normal((32, 3, 32, 32)).astype(np.float32)})
r = load_module(resnet, device="tsim")
x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
logits = r(x)[0]
st = r.stats()
print(f"ResNet-18 (32x32): {len(st['layers'])} accelerator nodes, {st['cycles']} cycles, "
      f"GEMM utilization {st['gemm_utilization']:.1%}; logits {logits.shape}")
assert logits.shape == (1, 1000) and np.isfinite(logits).all()
# the int8 graph run in numpy (``compiler.quant.run``) is the bit-exact oracle
want = run_int8(resnet.plan.qgraph, {"input": x})[0]
np.testing.assert_array_equal(logits, want)
print(f"ResNet-18 matches the int8 numpy reference (max abs error "
      f"{np.abs(logits - want).max()})")
