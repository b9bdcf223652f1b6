"""The depthwise default's column tile (``ow_vec`` cap 32 on 512-bit targets): rows of 28
and 56 columns run as 28-lane vectors (not a power of two), 7 as one 7-lane vector, and 50
as a 25-lane one; each agrees with numpy at 1e-4, stride 1 (plain padded copy) and 2
(phase-split copy), and the padded copy of each interior row is one vector."""
from __future__ import annotations

import re

import pytest
from lowering_cases import Model, run_group

from compiler.codegen.llvm.target import Target
from compiler.graph import Op, make
from compiler.graph_lower.master import MasterKind
from compiler.tir import lower

AVX512 = Target("x86_64-unknown-linux-gnu", "znver4", "+avx2,+fma,+avx512f", False)


@pytest.mark.parametrize("hw,stride", [(56, 1), (112, 2), (28, 1), (56, 2), (7, 1), (14, 2),
                                       (50, 1)])
def test_wide_column_tiles_match_numpy(hw, stride):
    m = Model()
    x = m.input("x", (1, 4, hw, hw))
    w = m.param("w", (4, 1, 3, 3))
    y = make(Op.CLIP, make(Op.CONV2D, x, w, strides=(stride, stride), pads=(1, 1, 1, 1),
                           groups=4), min=0.0, max=6.0)
    kdef = run_group(*m.group(y), target=AVX512)
    assert kdef.master.kind is MasterKind.DEPTHWISE_CONV2D
    lanes = {56: 28, 28: 28, 7: 7, 50: 25}[hw // stride]
    assert f"broadcast(0.0f, {lanes})" in str(lower(kdef.schedule, kdef.args, "k"))


@pytest.mark.parametrize("hw,stride,row", [(56, 1, "1, 56"), (56, 2, "2, 28"), (28, 2, "2, 14")])
def test_the_padded_copy_moves_each_interior_row_as_one_vector(hw, stride, row):
    """Border cut off by loop_partition; stride 2 reads every other column per phase."""
    m = Model()
    x = m.input("x", (1, 4, hw, hw))
    y = make(Op.RELU, make(Op.CONV2D, x, m.param("w", (4, 1, 3, 3)), strides=(stride, stride),
                           pads=(1, 1, 1, 1), groups=4))
    kdef = run_group(*m.group(y), target=AVX512)
    ir_text = str(lower(kdef.schedule, kdef.args, "k"))
    assert re.search(rf"= p0\[ramp\([^\n]*, {row}\)\]", ir_text), ir_text
