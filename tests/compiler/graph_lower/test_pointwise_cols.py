"""1x1 stride-1 convs vectorised along the output columns (``algorithm`` ``cols``,
``topi.conv2d.schedule_conv2d_cols``): chosen by default where a tile of whole vectors
divides the row, on 256- and 512-bit x86 targets; every path against numpy."""
from __future__ import annotations

import pytest
from lowering_cases import Model, run_group

from compiler.autotune.task import master_of
from compiler.codegen.llvm.target import Target, host_target
from compiler.graph import Op, make

_AVX2 = Target("x86_64-unknown-linux-gnu", "znver1", "+avx,+avx2,+fma", False)
_AVX512 = Target("x86_64-unknown-linux-gnu", "znver4", "+avx,+avx2,+fma,+avx512f", False)
_SSE = Target("x86_64-unknown-linux-gnu", "x86-64", "+sse2", False)


def _group(c, o, h, w, const_weight=True, **attrs):
    m = Model()
    x = m.input("x", (1, c, h, w))
    wt = m.param("w", (o, c, 1, 1)) if const_weight else m.input("w", (o, c, 1, 1))
    return m.group(make(Op.CLIP, make(Op.CONV2D, x, wt, **attrs), min=0.0, max=6.0))


@pytest.mark.parametrize("target,c,o,w,want", [
    (_AVX2, 16, 96, 112, ("cols", 16, 4)),     # 2 vectors of 8 columns x 4 channels
    (_AVX2, 24, 144, 56, ("cols", 8, 8)),      # 16 does not divide 56: one vector
    (_AVX2, 32, 192, 28, ("direct", 7, 16)),   # no whole vector divides 28; 2 x 7 accumulators
    (_AVX512, 16, 96, 112, ("cols", 16, 8)),
    (_AVX512, 24, 144, 56, ("direct", 14, 16)),
    (_SSE, 16, 96, 112, ("direct", 14, 16)),   # 128-bit: not measured, stays direct
])
def test_default_algorithm_per_target_and_row(target, c, o, w, want):
    g, _ = _group(c, o, 2, w)
    impl, work = master_of(g, target)
    d = impl.space(work).default
    assert (d["algorithm"], d["ow_tile"], d["conv_out_block"]) == want


def test_cols_is_not_offered_for_strided_or_padded_1x1_convs():
    for attrs in ({"strides": (2, 2)}, {"pads": (1, 1, 1, 1)}):
        g, _ = _group(8, 16, 8, 16, **attrs)
        impl, work = master_of(g, _AVX2)
        knobs = {k.name: k for k in impl.space(work).knobs}
        assert "cols" not in getattr(knobs.get("algorithm"), "candidates", ())


@pytest.mark.parametrize("c,o,w,block,tile,const_weight", [
    (16, 32, 16, 4, 16, True),
    (5, 21, 12, 16, 8, True),        # padded block of 16 over 21 channels, tile 8 -> 6
    (8, 24, 8, 8, 8, False),         # a weight computed in the graph, packed in the kernel
])
def test_cols_matches_numpy(c, o, w, block, tile, const_weight):
    g, params = _group(c, o, 3, w, const_weight)
    impl, work = master_of(g, host_target())
    cfg = impl.space(work).point(algorithm="cols", conv_out_block=block, ow_tile=tile)
    run_group(g, params, config=cfg)
