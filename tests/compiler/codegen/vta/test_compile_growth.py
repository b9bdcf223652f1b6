"""The VTA code generator's work grows with the instructions it emits, not faster: index
expressions are compiled once per build, uop kernels built once per distinct key
(``compiler/codegen/vta/memo.py``), whatever the number of tiles. Counted, not timed."""
from __future__ import annotations

import pytest

from compiler.codegen.vta import codegen, eval as vta_eval
from compiler.codegen.vta.eval import CodegenError, evaluate
from compiler.codegen.vta.memo import outer_inputs
from compiler.tir import ir
from compiler.tir.ops import ForKind
from compiler.topi.vta import Tiling, conv2d_program
from vta_hw.config import load_config

SMALL = load_config("1x4_i8w8a32_8_8_8_9_bus32")
TILING = Tiling(th=1, tw=4, toc=1, tic=1, tkh=1, vt=2)   # fits the 8_8_8_9 buffers


def _compile_counting(monkeypatch, size: int) -> tuple[int, int, int]:
    """(instructions, uop kernels built, index expressions compiled) of a 3x3 conv over a
    size x size image on the small preset, with the tiling fixed."""
    built = []
    real = codegen._Gen._build_kernel
    monkeypatch.setattr(codegen._Gen, "_build_kernel",
                        lambda self, s, env: (built.append(1), real(self, s, env))[1])
    vta_eval.compiled.cache_clear()
    vta_eval._BY_ID.clear()
    k = conv2d_program(SMALL, (1, 8, size, size), (8, 8, 3, 3), 1, 1, shift=6, relu=True,
                       tiling=TILING)
    return len(k.program.insns), len(built), vta_eval.compiled.cache_info().misses


def test_kernel_builds_and_expression_compiles_do_not_grow_with_the_tiles(monkeypatch):
    small = _compile_counting(monkeypatch, 8)
    big = _compile_counting(monkeypatch, 16)
    assert big[0] > 3.5 * small[0]          # four times the tiles: four times the instructions
    # every edge case (tile clipped at the image's edges; at 4x4 a single column tile folds
    # one index expression away) appears at both sizes, so the kernels built and the
    # expressions compiled are the same count
    assert big[1:] == small[1:]
    assert big[1] < small[0] / 10           # and few next to the instructions


def _for(v, n, body):
    return ir.For(v, ir.const(0), ir.const(n), ForKind.SERIAL, body)


def test_outer_inputs_are_the_largest_pieces_read_from_outside():
    a, b, y = ir.var("a"), ir.var("b"), ir.var("y")
    buf = ir.Buffer("buf", "int32", (64,))
    st = _for(y, 4, ir.Store(buf, ir.const(0), ((a * 4 + b) + y * (a + 1),)))
    assert outer_inputs(st) == (a * 4 + b, a + 1)
    # a loop variable bound inside is not an input, even where an outer one has its name
    assert outer_inputs(_for(a, 2, st)) == (b,)


def test_compiled_evaluation_matches_the_ir_s_floor_semantics():
    x = ir.var("x")
    e = ir.select(x < 0, (x - 7) // 4, ir.max_(x % 3, ir.min_(x, 1)))
    assert [int(evaluate(e, {"x": v})) for v in (-5, -1, 0, 2, 4)] == [-3, -2, 0, 2, 1]
    with pytest.raises(CodegenError, match="index variable 'x' is not bound"):
        evaluate(e, {})
