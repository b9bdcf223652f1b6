"""compiler.topi.x86_dot.conv2d_acc: the one conv accumulator of VNNI (groups of 4, int32)
and AVX512-BF16 (groups of 2, float32); the kernels built on it are checked bit-exact /
against numpy in test_kernels_vnni.py and test_x86_matrix_units.py."""
import pytest

from compiler import te
from compiler.topi import x86_dot


@pytest.mark.parametrize("g,xdtype,acc", [(4, "uint8", "int32"), (2, "int16", "float32")])
def test_group_width_from_layout_and_accumulator_dtype(g, xdtype, acc):
    x = te.placeholder((1, 3, 10, 9, g), xdtype, "x")          # C = 3 groups of g, padded 10 x 9
    w = te.placeholder((2, 3, 3, 3, 16, g), "int8" if g == 4 else "int16", "w")
    out = x86_dot.conv2d_acc(x, w, (2, 1), acc, name="acc")
    # OH = (10 - 3) // 2 + 1, OW = (9 - 3) // 1 + 1; O in 2 blocks of 16 lanes
    assert out.shape == (1, 2, 4, 7, 16) and out.dtype == acc
    assert [r.extent for r in out.op.reduce_axis] == [3, 3, 3, g]


def test_mismatched_groups_name_both_layouts():
    x = te.placeholder((1, 2, 6, 6, 4), "uint8", "x")
    w = te.placeholder((1, 4, 3, 3, 16, 2), "int16", "w")
    with pytest.raises(ValueError, match=r"input's channel groups 2 x 4 must match the "
                                         r"weight's 4 x 2"):
        x86_dot.conv2d_acc(x, w, (1, 1), "float32")
