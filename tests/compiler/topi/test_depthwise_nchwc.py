"""Blocked (NCHW{b}c) depthwise convolution: compute and CPU schedule against the reference."""
from __future__ import annotations

import numpy as np
import pytest

import compiler.build
from compiler import te, tir
from compiler.graph.opdefs.nn import conv2d as ref_conv2d
from compiler.graph.opdefs.transform import layout_transform
from compiler.topi import depthwise_nchwc as tdw


@pytest.mark.parametrize("c,b,h,w,stride,pad,tile,par", [
    (16, 8, 9, 11, 1, 1, 7, 2),         # partial column tile (11 = 7 + 4), padded copy per task
    (16, 8, 10, 10, 2, 1, 7, 2),        # stride 2
    (32, 16, 6, 6, 1, 1, 4, 3),         # 16-channel block, padded copy at the root
    (16, 8, 7, 7, 1, 0, 14, 2),         # no padding, a tile wider than the row
])
def test_depthwise_nchwc_matches_reference(c, b, h, w, stride, pad, tile, par):
    x = te.placeholder((1, c // b, h, w, b), "float32", "x")
    k = te.placeholder((c // b, 1, 3, 3, b), "float32", "k")
    conv = tdw.depthwise_conv2d_nchwc(x, k, (stride, stride), (pad,) * 4)
    out = te.compute(conv.shape, lambda *i: te.maximum(conv[i], 0.0), name="relu")
    s = te.create_schedule(out)
    tdw.schedule_depthwise_nchwc(s, conv, out, tile, par)
    args = [x, k] + ([conv.op.reads()[0]] if pad and par == 3 else []) + [out]
    # one fork-join per layer unless the padded copy runs at the root in its own loop
    regions = str(tir.lower(s, args, "dw")).count("# parallel")
    assert regions == (2 if pad and par == 3 else 1)
    f = compiler.build(s, args, name="dw", fp_contract=True)
    rng = np.random.default_rng(0)
    xv = rng.standard_normal((1, c, h, w)).astype("float32")
    kv = rng.standard_normal((c, 1, 3, 3)).astype("float32")
    vals = [layout_transform(xv, "NCHW", f"NCHW{b}c"), layout_transform(kv, "OIHW", f"OIHW{b}o")]
    if len(args) == 4:
        vals.append(np.zeros(args[2].shape, "float32"))
    y = np.empty(out.shape, "float32")
    f(*vals, y)
    expected = np.maximum(ref_conv2d(xv, kv, {"strides": (stride, stride), "pads": (pad,) * 4,
                                              "dilations": (1, 1), "groups": c}), 0)
    np.testing.assert_allclose(layout_transform(y, f"NCHW{b}c", "NCHW"), expected,
                               rtol=1e-5, atol=1e-5)


def test_depthwise_nchwc_names_a_kernel_of_the_wrong_block():
    x = te.placeholder((1, 2, 8, 8, 8), "float32", "x")
    with pytest.raises(ValueError, match=r"must be \[2, 1, KH, KW, 8\] .* \(layout OIHW8o\)"):
        tdw.depthwise_conv2d_nchwc(x, te.placeholder((1, 1, 3, 3, 16), "float32", "k"))
