"""The int8 MAX_POOL kernel (``compiler/quant/kernels/pool.py``, row-vectorised) vs
``eval_node``: exact, over padding, strides, dilation, ceil_mode, rows longer than one
vector, and uint8 values."""
import numpy as np
import pytest
from quant_kernel_run import run_kernel

import compiler

from compiler.quant import kernels
from compiler.quant.qgraph import QNode, QOp, eval_node


def _pool(kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1), dilations=(1, 1), ceil_mode=0):
    return {"ceil_mode": ceil_mode, "dilations": dilations, "kernel": kernel, "pads": pads,
            "strides": strides}


CASES = {   # id: (attrs, input shape, output shape)
    "resnet_stem_3x3_s2_p1": (_pool(), (1, 4, 112, 112), (1, 4, 56, 56)),
    "odd_rows_ceil_mode": (_pool(pads=(0, 0, 0, 0), ceil_mode=1), (1, 3, 10, 12), (1, 3, 5, 6)),
    "2x2_s1_no_padding": (_pool(kernel=(2, 2), strides=(1, 1), pads=(0, 0, 0, 0)),
                          (2, 2, 7, 9), (2, 2, 6, 8)),
    "dilated_asymmetric_pads": (_pool(dilations=(2, 2), strides=(1, 2), pads=(2, 0, 1, 2)),
                                (1, 2, 9, 11), (1, 2, 8, 5)),
    "row_longer_than_a_vector": (_pool(strides=(1, 1)), (1, 2, 5, 150), (1, 2, 5, 150)),
}


def _node(attrs, in_shape, shape, dtype):
    src = QNode(QOp.INT8, (), in_shape, dtype, 4)
    return QNode(QOp.INT8, (0,), shape, dtype, 4, {"op": "MAX_POOL", "attrs": attrs},
                 name="maxpool"), [src]


@pytest.mark.parametrize("case", CASES)
def test_int8_maxpool_is_exact(rng, case):
    attrs, in_shape, shape = CASES[case]
    node, srcs = _node(attrs, in_shape, shape, "int8")
    x = rng.integers(-128, 128, in_shape).astype(np.int8)
    x.flat[::7] = -128      # the lowest value, as the padding's
    got = run_kernel(kernels.cpu_kernel(node, srcs, {}, "k"), x)
    np.testing.assert_array_equal(got, eval_node(node, [x], {}))


def test_uint8_maxpool_is_the_int8_one_shifted(rng):
    """uint8 activations (a u8s8 model): max commutes with the -128 offset, so the uint8
    kernel equals the int8 one on x - 128, + 128 (padding included: 0 and -128)."""
    attrs, in_shape, shape = CASES["resnet_stem_3x3_s2_p1"]
    node, srcs = _node(attrs, in_shape, shape, "uint8")
    x = rng.integers(0, 256, in_shape).astype(np.uint8)
    got = run_kernel(kernels.cpu_kernel(node, srcs, {}, "k"), x)
    assert got.dtype == np.uint8
    node8, _ = _node(attrs, in_shape, shape, "int8")
    want = eval_node(node8, [(x.astype(np.int16) - 128).astype(np.int8)], {})
    np.testing.assert_array_equal(got, (want.astype(np.int16) + 128).astype(np.uint8))


def test_a_shape_the_pool_disagrees_with_is_named():
    node, srcs = _node(_pool(), (1, 4, 112, 112), (1, 4, 57, 56), "int8")
    with pytest.raises(ValueError, match=r"node 'maxpool': MAX_POOL gives shape \[1, 4, 56, 56\]"):
        kernels.cpu_kernel(node, srcs, {}, "k")


def test_the_window_maximum_is_a_vector_over_the_row(rng):
    """Each tap is one wide vpmaxsb over the output row (ymm or zmm): the kernel's point.
    The graph lowering's pool (the window innermost per cell) has no vector max."""
    attrs, in_shape, shape = CASES["resnet_stem_3x3_s2_p1"]
    node, srcs = _node(attrs, in_shape, shape, "int8")
    kd = kernels.cpu_kernel(node, srcs, {}, "k")
    asm = compiler.build(kd.schedule, kd.args, target="llvm -mcpu=skylake-avx512",
                         name="k").assembly()
    wide = [ln for ln in asm.splitlines() if "vpmaxsb" in ln and ("%ymm" in ln or "%zmm" in ln)]
    assert len(wide) >= 9, [ln for ln in asm.splitlines() if "max" in ln][:20]
