"""DMA copies whose indices are affine in the copy's two loops are lowered from three
evaluations (``compiler/codegen/vta/affine.py``) instead of arrays over the grid; the
instructions must be exactly those of the grid path."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from compiler.codegen.vta import codegen, dma  # codegen first: it imports dma
from compiler.codegen.vta.affine import comparisons, interval, is_affine
from compiler.codegen.vta.eval import evaluate
from compiler.tir import ir
from compiler.topi.vta import Tiling, add_program, conv2d_program
from vta_hw.config import load_config

y, x, a = ir.var("y"), ir.var("x"), ir.var("a")
YX = frozenset({"y", "x"})


@pytest.mark.parametrize("e, affine", [
    (y * 4 + x - 3, True),
    (y * a + (a // 3) * x + a % 5, True),        # factors free of y and x
    ((a * 7 + 2) // 4 + y, True),                # a division reading neither
    (y * x, False),
    ((y * 4 + x) // 2, False),
    (ir.min_(y, 3) + x, False),
    (ir.select(a < 2, y, x), False),
    ((a + x // 3) * 48 + (x % 3) * 16, True),   # a fused axis: x * 16
    ((a + x // 3) * 48 + (x % 3) * 8, False),
])
def test_is_affine(e, affine):
    assert is_affine(e, YX) is affine


def test_comparisons_are_the_conjunction_of_affine_atoms():
    cond = ir.Expr(ir.Op.AND, "bool", (y >= 1, x * 2 < a))
    assert [(s, k) for s, k, _, _ in comparisons(cond, YX)] == [(-1, -1), (1, 0)]
    assert comparisons(ir.Expr(ir.Op.OR, "bool", (y >= 1, x < 2)), YX) is None
    assert comparisons(y // 2 < 3, YX) is None


@pytest.mark.parametrize("op", ["<", "<=", ">", ">="])
def test_interval_is_where_each_comparison_holds(op):
    t = ir.var("t")
    for step, c, n in itertools.product((-3, -1, 0, 1, 2), range(-7, 8), (1, 5)):
        lhs = t * step + c
        cond = {"<": lhs < 0, "<=": lhs <= 0, ">": lhs > 0, ">=": lhs >= 0}[op]
        ((sign, shift, p, q),) = comparisons(cond, frozenset({"t"}))
        g0 = int(evaluate(p, {"t": 0})) - int(evaluate(q, {"t": 0}))
        lo, hi = interval(sign * step, sign * g0 + shift, n)
        holds = np.asarray(evaluate(cond, {"t": np.arange(n)}), bool)
        assert holds.tolist() == [lo <= v < hi for v in range(n)], (op, step, c, n)


SMALL = "1x4_i8w8a32_8_8_8_9_bus32"
MID = "1x4_i8w8a32_10_10_10_11_bus32"
CASES = [  # (preset, data shape, kernel shape, stride, padding, tiling)
    (SMALL, (1, 8, 9, 9), (8, 8, 3, 3), 1, 1, Tiling(th=1, tw=4, toc=1, tic=1, tkh=1, vt=2)),
    (MID, (1, 16, 14, 14), (16, 16, 3, 3), 2, 1, None),
    (MID, (1, 8, 11, 11), (8, 8, 1, 1), 1, 0, None),
    (MID, (1, 64, 4, 4), (64, 64, 3, 3), 1, 1, None),   # fused kernel rows: x // 3, x % 3
    ("1x16_i8w8a32_15_15_18_17", (1, 32, 15, 15), (32, 32, 3, 3), 1, 2, None),
]


def _programs(monkeypatch, affine: bool):
    if not affine:
        monkeypatch.setattr(dma.DmaMixin, "_dma_affine", lambda self, *args: False)
    out = []
    for preset, ds, ks, stride, pad, tiling in CASES:
        k = conv2d_program(load_config(preset), ds, ks, stride, pad, shift=6, relu=True,
                           tiling=tiling)
        out.append(k.program)
    out.append(add_program(load_config(MID), (1, 8, 6, 6), la=1, lb=0, shift=1,
                           relu=False).program)
    return [(p.insn_bytes(), p.uop_bytes()) for p in out]


def test_affine_path_emits_the_grid_path_s_instructions(monkeypatch):
    taken = []
    real = dma.DmaMixin._dma_affine
    monkeypatch.setattr(dma.DmaMixin, "_dma_affine",
                        lambda self, *args: taken.append(real(self, *args)) or taken[-1])
    fast = _programs(monkeypatch, True)
    assert all(taken)                        # every copy of these kernels is affine
    monkeypatch.undo()
    assert _programs(monkeypatch, False) == fast
