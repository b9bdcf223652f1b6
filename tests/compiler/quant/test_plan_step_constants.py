"""Steps that share one kernel (equal signatures: op, attributes, types) each pass their own
constants: two convs alike but for their weights (w and -w: the same scales) stay apart."""
import numpy as np

from compiler import build_model
from compiler.quant import QOp, run as run_oracle
from driver.runtime import load_module
from tests.models.builders import OnnxBuilder, _io


def test_kernel_sharing_steps_keep_their_own_weights():
    b = OnnxBuilder(3)
    w = b.randn(16, 16, 3, 3)
    ca = b.node("Conv", ["input", b.const(w, "w")], kernel_shape=[3, 3], pads=[1] * 4)
    cb = b.node("Conv", ["input", b.const(-w, "w")], kernel_shape=[3, 3], pads=[1] * 4)
    model = b.model([_io("input", [1, 16, 8, 8])], [_io(b.node("Concat", [ca, cb], axis=1), None)], 13)
    x = np.random.default_rng(0).standard_normal((4, 16, 8, 8)).astype(np.float32)
    cm = build_model(model, target="llvm", quantize="int8", calib={"input": x})
    convs = [n for n in cm.plan.qgraph.nodes if n.op is QOp.CONV2D]
    assert len(convs) == 2 and convs[0].attrs == convs[1].attrs     # one shared kernel
    got = load_module(cm)(x[:1])[0]
    np.testing.assert_array_equal(got, run_oracle(cm.plan.qgraph, {"input": x[:1]})[0])
    assert np.abs(got[:, :16] + got[:, 16:]).max() < np.abs(got).max() / 4   # conv(-w) = -conv(w)
