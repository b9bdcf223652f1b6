"""Winograd F(2x2,3x3) / F(4x4,3x3): the compute and CPU schedule against numpy's direct conv,
the compile-time weight transform, and the errors on shapes it does not take."""
from __future__ import annotations

import numpy as np
import pytest

import compiler.build
from compiler import te
from compiler.graph.opdefs.nn import conv2d as ref_conv2d
from compiler.topi import winograd as tw


@pytest.mark.parametrize("m", [2, 4])
@pytest.mark.parametrize("n,c,h,w,o,ob,pads,tile", [
    (1, 8, 9, 11, 32, 16, (1, 1, 1, 1), 4),     # partial tiles in both directions
    (2, 5, 8, 8, 8, 8, (1, 0, 1, 2), 4),        # batch 2, odd channels (block 1), asymmetric pads
    (1, 16, 6, 6, 16, 16, (0, 0, 0, 0), 4),     # no padding: output 4x4
    # 3 input-channel blocks of 8, 3 output blocks (no pair), a tile row of 13 or 7 tiles that
    # the 7-tile register step does not divide
    (1, 24, 2, 26, 48, 16, (1, 1, 1, 1), 14),
])
def test_winograd_matches_direct_conv(m, n, c, h, w, o, ob, pads, tile):
    a = m + 2
    x = te.placeholder((n, c, h, w), "float32", "x")
    k = te.placeholder((a, a, o // ob, c, ob), "float32", "k")
    acc, stages = tw.winograd_conv2d_nchw(x, k, m, pads)
    out = te.compute((n, o) + acc.shape[2:4], lambda b, oc, y, z: acc[b, oc // ob, y, z, oc % ob],
                     name="out")
    s = te.create_schedule(out)
    tw.schedule_winograd_nchw(s, acc, out, tile=tile)
    scratch = list(stages)
    f = compiler.build(s, [x, k, *scratch, out], name="wino", fp_contract=True)
    rng = np.random.default_rng(0)
    xv = rng.standard_normal((n, c, h, w)).astype("float32")
    wv = rng.standard_normal((o, c, 3, 3)).astype("float32")
    y = np.empty(out.shape, "float32")
    f(xv, tw.transform_weight(wv, m, ob), *[np.zeros(t.shape, "float32") for t in scratch], y)
    expected = ref_conv2d(xv, wv, {"strides": (1, 1), "pads": pads, "dilations": (1, 1)})
    assert y.shape == expected.shape
    # relative to the output's scale: F(4x4,3x3) rounds a few times worse than F(2x2,3x3)
    assert np.abs(y - expected).max() / np.abs(expected).max() < (1e-6 if m == 2 else 1e-5)


def test_weight_transform_is_g_g_gt_blocked():
    w = np.random.default_rng(1).standard_normal((32, 3, 3, 3)).astype("float32")
    u = tw.transform_weight(w, 2, 16)
    assert u.shape == (4, 4, 2, 3, 16) and u.dtype == np.float32
    G = np.array(tw.MATRICES[2][1], dtype=np.float64)
    o, c = 17, 2                                     # block 1, lane 1
    np.testing.assert_allclose(u[:, :, 1, c, 1], G @ w[o, c].astype(np.float64) @ G.T, rtol=1e-6)


@pytest.mark.parametrize("P,cap,expected", [(784, 7, 7), (49, 7, 7), (16, 7, 4), (13, 7, 7), (3, 7, 3)])
def test_register_step_divides_the_tiles_when_it_can(P, cap, expected):
    assert tw._tiles_per_step(P, cap) == expected


def test_errors_name_the_value_and_the_rule():
    with pytest.raises(ValueError, match=r"m must be one of \[2, 4\], not 3"):
        tw.transform_weight(np.zeros((16, 1, 3, 3), "float32"), 3, 16)
    with pytest.raises(ValueError, match="needs a 3x3 kernel"):
        tw.transform_weight(np.zeros((16, 1, 5, 5), "float32"), 2, 16)
    x = te.placeholder((1, 8, 6, 6), "float32", "x")
    with pytest.raises(ValueError, match=r"needs a \[4, 4, O/ob, 8, ob\] kernel"):
        tw.winograd_conv2d_nchw(x, te.placeholder((6, 6, 1, 8, 16), "float32", "k"), 2)
