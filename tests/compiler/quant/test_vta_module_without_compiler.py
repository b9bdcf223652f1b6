"""A saved digits accelerator module runs on fsim and tsim in a process where ``compiler``,
llvmlite and onnx cannot be imported (its CPU steps are kernels.so), bit-equal to the
quantized oracle."""
import os
import subprocess
import sys

import numpy as np
import pytest

from compiler.frontend.onnx import from_onnx
from compiler.quant import build_plan, quantize, run as run_oracle
from compiler.quant.lower_plan import lower_plan
from vta_hw.config import load_config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BLOCKED_RUN = r"""
import sys
for name in ("llvmlite", "llvmlite.binding", "llvmlite.ir", "onnx", "onnxruntime", "compiler"):
    sys.modules[name] = None          # any import of these now raises ImportError
import numpy as np
from driver.runtime import load_module
m = load_module(sys.argv[1], device=sys.argv[2])
np.save(sys.argv[4], m(np.load(sys.argv[3]))[0])
assert not any(k.startswith(("llvmlite", "onnx", "compiler")) and sys.modules[k] is not None
               for k in sys.modules)
print("ok")
"""


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    calib = np.load("examples/digits/calib.npz")["images"].astype(np.float32) * 0.0625
    g, p = from_onnx("examples/digits/digits_cnn.onnx", input_shapes={"image": (120, 1, 8, 8)})
    plan = build_plan(quantize(g, p, {"image": calib.reshape(-1, 1, 8, 8)}), load_config())
    d = tmp_path_factory.mktemp("digits")
    lower_plan(plan).save(str(d / "digits_vta.vtamod"))
    x = np.load("examples/digits/heldout.npz")["images"][:120].astype(np.float32) * 0.0625
    np.save(d / "x.npy", x.reshape(120, 1, 8, 8))
    return plan, d


@pytest.mark.parametrize("device", ["fsim", "tsim"])
def test_runs_without_compiler_llvmlite_or_onnx(digits, device):
    plan, d = digits
    proc = subprocess.run([sys.executable, "-c", BLOCKED_RUN, str(d / "digits_vta.vtamod"), device,
                           str(d / "x.npy"), str(d / f"y_{device}.npy")], capture_output=True,
                          text=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
    want = run_oracle(plan.qgraph, {"image": np.load(d / "x.npy")})[0]
    np.testing.assert_array_equal(np.load(d / f"y_{device}.npy"), want)
