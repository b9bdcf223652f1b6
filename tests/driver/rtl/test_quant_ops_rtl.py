"""The quantized graph's accelerator ops on the RTL (Verilator): the residual add and a
conv with per-channel shifts give the oracle's values and the cycle simulator's cycles."""
import numpy as np
from rtl_check import SMALL

from compiler.quant.qgraph import QNode, QOp, eval_node
from compiler.topi.vta import add_program, conv2d_program
from driver.device import Device


def _rtl_and_tsim(cfg, program, inputs, unpack, want):
    cycles = {}
    for backend in ("rtl", "tsim"):
        with Device(backend, config=cfg) as dev:
            h = dev.load(program)
            for name, v in inputs.items():
                h.copy_in(name, v)
            cycles[backend] = dev.run_sync(h, timeout_s=600).cycles
            np.testing.assert_array_equal(unpack(h.copy_out("out")), want, err_msg=backend)
    assert cycles["rtl"] == cycles["tsim"] > 0


def test_add_on_rtl(rtl_config):
    cfg = rtl_config(SMALL)
    shape, attrs = (1, 10, 3, 3), {"la": 0, "lb": 2, "shift": 1, "relu": True}
    rng = np.random.default_rng(5)
    a = rng.integers(-128, 128, shape).astype(np.int8)
    b = rng.integers(-128, 128, shape).astype(np.int8)
    k = add_program(cfg, shape, tile=4, **attrs)  # 3 channel blocks x 9 pixels: 7 tiles
    want = eval_node(QNode(QOp.ADD, (0, 1), shape, "int8", 0, attrs), [a, b], {})
    _rtl_and_tsim(cfg, k.program, k.inputs(a, b), k.unpack, want)


def test_per_channel_conv_on_rtl(rtl_config):
    cfg = rtl_config(SMALL)
    rng = np.random.default_rng(6)
    x = rng.integers(-128, 128, (1, 6, 4, 4)).astype(np.int8)
    w = rng.integers(-128, 128, (7, 6, 3, 3)).astype(np.int8)
    b = rng.integers(-3000, 3000, 7).astype(np.int32)
    shifts = (0, 3, 5, 7, 9, 11, 13)
    k = conv2d_program(cfg, x.shape, w.shape, 1, 1, shift=shifts, relu=False)
    _rtl_and_tsim(cfg, k.program, k.inputs(x, w, b), k.unpack, k.reference(x, w, b))
