"""GEMM/ALU loops are bounds-checked from their extents, before any index array is built.

``iter_out = iter_in = 16383`` fits the fields but is 2**28 iterations per uop: the
check names the first bad iteration in O(uops) and the run never allocates more than
a chunk (``sim.loops``)."""
from __future__ import annotations

import itertools
import tracemalloc

import numpy as np
import pytest

from sim import cycle, functional, loops, races
from sim.errors import SramIndexError
from vta_hw.config import load_config
from vta_hw.isa import Alu, Finish, Gemm, Load, MemId, Uop
from vta_hw.program import DramLayout

SMALL = "1x4_i8w8a32_10_10_10_11_bus32"
BIG = 16383  # the largest 14-bit extent


def _program(insn):
    cfg = load_config(SMALL)
    lay = DramLayout(cfg)
    ub = lay.alloc_uops(2)
    return lay.finish([Load(mem=MemId.UOP, dram_base=ub, y_size=1, x_size=2, x_stride=2), insn,
                       Finish()], [Uop(0, 0, 0), Uop(1, 1, 1)])


@pytest.mark.parametrize("run", [functional.run, cycle.run, races.find_races],
                         ids=["functional", "cycle", "races"])
@pytest.mark.parametrize("insn,field,k,value", [
    # dst = u + o: iteration o=127 (k = 127 * 16383 * 2), uop 1 reaches acc entry 128
    (Gemm(uop_bgn=0, uop_end=2, iter_out=BIG, iter_in=BIG, dst_factor_out=1), "dst",
     (127 * BIG + 0) * 2 + 1, 128),
    # src = u + 3i on the 128-entry ACC (ALU): i=42 gives 126, 127; i=43 at uop 0 gives 129
    (Alu(uop_bgn=0, uop_end=2, iter_out=BIG, iter_in=BIG, src_factor_in=3), "src",
     43 * 2 + 0, 129),
])
def test_huge_loop_fails_fast_with_little_memory(run, insn, field, k, value):
    tracemalloc.start()
    try:
        with pytest.raises(SramIndexError) as e:
            run(_program(insn))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    err = e.value
    assert err.insn_index == 1 and err.field == field and err.value == value
    assert f"uop iteration {k} computes {field} index {value}" in str(err)
    assert peak < 64 << 20, f"peak {peak} bytes"


def test_first_past_matches_every_iteration():
    """The O(uops) search finds the same iteration as scanning them all, for random loops."""
    rng = np.random.default_rng(5)
    for _ in range(300):
        n_out, n_in, n_u = (int(v) for v in rng.integers(0, 6, 3))
        f_out, f_in = (int(v) for v in rng.integers(0, 5, 2))
        insn = Gemm(uop_bgn=0, uop_end=n_u, iter_out=n_out, iter_in=n_in, dst_factor_out=f_out,
                    dst_factor_in=f_in)
        uops = np.zeros((n_u, 3), np.int64)
        uops[:, 0] = rng.integers(0, 12, n_u)
        depth = int(rng.integers(1, 30))
        want = None
        for kk, (o, i, u) in enumerate(itertools.product(range(n_out), range(n_in), range(n_u))):
            idx = int(uops[u, 0]) + o * f_out + i * f_in
            if idx >= depth:
                want = (kk, idx)
                break
        assert loops.first_past(insn, uops, "dst", depth) == want
        got = list(loops.chunks(insn, uops, ("dst",), max_iters=7))
        flat = np.concatenate([c[0] for c in got]) if got else np.zeros(0, np.int64)
        assert flat.tolist() == [int(uops[u, 0]) + o * f_out + i * f_in for o, i, u in
                                 itertools.product(range(n_out), range(n_in), range(n_u))]
        assert loops.entries(insn, uops, "dst").tolist() == sorted(set(flat.tolist()))
