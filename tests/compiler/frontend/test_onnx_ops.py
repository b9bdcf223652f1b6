"""Per-op table: a single-node ONNX model per case, run through from_onnx + the reference
executor (and the full optimize pipeline), compared with onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.frontend.onnx import from_onnx
from compiler.graph import optimize, run
from tests.models.oracle import assert_close
from tests.models.ort_u8s8 import ort_run_exact
from tests.models.single_node import single_node_model

R = np.random.default_rng(42)


def f32(*shape, lo=-2.0, hi=2.0):
    return R.uniform(lo, hi, shape).astype(np.float32)


def i64(*values):
    return np.array(values, np.int64)


def ties(*shape):
    """float32 values with repeats (ties exercise ArgMax/TopK's lowest-index rule)."""
    return R.integers(-3, 4, shape).astype(np.float32)


def X(name, value):
    return (name, value, False)


def C(name, value):
    return (name, value, True)


x4 = f32(1, 4, 9, 9)
CASES = {
    # --- convolution ---
    "conv_pads": ("Conv", [X("x", x4), C("w", f32(6, 4, 3, 3))], dict(pads=[1, 1, 1, 1]), 17),
    "conv_asym_pads_bias": ("Conv", [X("x", x4), C("w", f32(6, 4, 3, 3)), C("b", f32(6))],
                            dict(pads=[0, 1, 2, 1]), 17),
    "conv_stride2": ("Conv", [X("x", x4), C("w", f32(8, 4, 3, 3))], dict(strides=[2, 2], pads=[1, 1, 1, 1]), 11),
    "conv_dilation2": ("Conv", [X("x", x4), C("w", f32(4, 4, 3, 3))], dict(dilations=[2, 2], pads=[2, 2, 2, 2]), 13),
    "conv_groups2": ("Conv", [X("x", x4), C("w", f32(6, 2, 3, 3))], dict(group=2), 17),
    "conv_depthwise": ("Conv", [X("x", x4), C("w", f32(4, 1, 3, 3))], dict(group=4, pads=[1, 1, 1, 1]), 21),
    "conv_depthwise_mult2": ("Conv", [X("x", x4), C("w", f32(8, 1, 3, 3))], dict(group=4, strides=[2, 2]), 17),
    "conv_same_upper": ("Conv", [X("x", f32(1, 4, 8, 8)), C("w", f32(4, 4, 4, 4))],
                        dict(auto_pad="SAME_UPPER", strides=[2, 2]), 17),
    "conv_same_lower": ("Conv", [X("x", f32(1, 4, 8, 8)), C("w", f32(4, 4, 2, 2))], dict(auto_pad="SAME_LOWER"), 17),
    "conv_valid_rect": ("Conv", [X("x", x4), C("w", f32(3, 4, 3, 2))], dict(auto_pad="VALID", strides=[1, 2]), 17),
    "conv_weight_input": ("Conv", [X("x", x4), X("w", f32(2, 4, 3, 3))], {}, 17),
    "convtranspose_s2": ("ConvTranspose", [X("x", f32(1, 4, 5, 5)), C("w", f32(4, 3, 3, 3))],
                         dict(strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]), 17),
    "convtranspose_groups_bias": ("ConvTranspose", [X("x", f32(1, 4, 5, 5)), C("w", f32(4, 2, 3, 3)), C("b", f32(4))],
                                  dict(group=2), 17),
    "convtranspose_dilation": ("ConvTranspose", [X("x", f32(1, 2, 4, 4)), C("w", f32(2, 3, 3, 3))],
                               dict(dilations=[2, 2], strides=[2, 2]), 13),
    "convtranspose_output_shape": ("ConvTranspose", [X("x", f32(1, 2, 4, 4)), C("w", f32(2, 2, 3, 3))],
                                   dict(strides=[2, 2], output_shape=[8, 8]), 17),
    # --- dense ---
    "gemm_transb": ("Gemm", [X("a", f32(3, 5)), C("b", f32(4, 5)), C("c", f32(4))], dict(transB=1), 13),
    "gemm_transa_alpha_beta": ("Gemm", [X("a", f32(5, 3)), C("b", f32(5, 4)), C("c", f32(3, 4))],
                               dict(transA=1, alpha=0.5, beta=2.0), 13),
    "gemm_no_c": ("Gemm", [X("a", f32(2, 6)), X("b", f32(6, 3))], {}, 11),
    "matmul_const_2d": ("MatMul", [X("a", f32(2, 7, 5)), C("b", f32(5, 3))], {}, 13),
    "matmul_batched": ("MatMul", [X("a", f32(2, 3, 4, 5)), X("b", f32(1, 3, 5, 6))], {}, 13),
    "matmul_vec": ("MatMul", [X("a", f32(5)), X("b", f32(2, 5, 3))], {}, 13),
    # --- elementwise, broadcasting ---
    "add_bcast": ("Add", [X("a", f32(2, 3, 4, 5)), C("b", f32(5))], {}, 13),
    "sub_bcast_both": ("Sub", [X("a", f32(2, 1, 4, 1)), X("b", f32(3, 1, 5))], {}, 14),
    "mul_scalar": ("Mul", [X("a", f32(2, 3)), C("b", np.float32(1.5))], {}, 13),
    "div_bcast": ("Div", [X("a", f32(2, 3, 4)), C("b", f32(3, 1, lo=0.5))], {}, 13),
    "pow_const": ("Pow", [X("a", f32(3, 4, lo=0.1)), C("b", np.float32(2.0))], {}, 15),
    "pow_bcast": ("Pow", [X("a", f32(3, 4, lo=0.1)), X("b", f32(4, lo=0.5))], {}, 13),
    "sqrt": ("Sqrt", [X("x", f32(3, 4, lo=0.0))], {}, 13),
    "relu": ("Relu", [X("x", f32(2, 3, 4))], {}, 14),
    "leakyrelu": ("LeakyRelu", [X("x", f32(2, 3, 4))], dict(alpha=0.2), 16),
    "clip_min_max": ("Clip", [X("x", f32(2, 8)), C("lo", np.float32(-0.5)), C("hi", np.float32(0.7))], {}, 11),
    "clip_max_only": ("Clip", [X("x", f32(2, 8)), ("lo", None, True), C("hi", np.float32(0.7))], {}, 13),
    "clip_none": ("Clip", [X("x", f32(2, 8))], {}, 13),
    "sigmoid": ("Sigmoid", [X("x", f32(3, 5, lo=-8, hi=8))], {}, 13),
    "tanh": ("Tanh", [X("x", f32(3, 5))], {}, 13),
    "erf": ("Erf", [X("x", f32(3, 5))], {}, 13),
    "gelu": ("Gelu", [X("x", f32(3, 5, lo=-4, hi=4))], {}, 20),
    "gelu_tanh": ("Gelu", [X("x", f32(3, 5, lo=-4, hi=4))], dict(approximate="tanh"), 20),
    "hardswish": ("HardSwish", [X("x", f32(3, 5, lo=-5, hi=5))], {}, 14),
    "cast_to_int32": ("Cast", [X("x", f32(3, 5, lo=-9, hi=9))], dict(to=6), 13),
    "cast_int64_to_float": ("Cast", [X("x", i64(1, -2, 3))], dict(to=1), 19),
    "identity": ("Identity", [X("x", f32(2, 2))], {}, 16),
    # --- normalization ---
    "softmax_13_axis1": ("Softmax", [X("x", f32(2, 3, 4, lo=-5, hi=5))], dict(axis=1), 13),
    "softmax_13_default": ("Softmax", [X("x", f32(2, 3, 4))], {}, 13),
    "softmax_11_coerced_2d": ("Softmax", [X("x", f32(2, 3, 4))], dict(axis=1), 11),
    "softmax_11_default": ("Softmax", [X("x", f32(2, 3, 4))], {}, 11),
    "layernorm_last": ("LayerNormalization", [X("x", f32(2, 5, 8)), C("s", f32(8)), C("b", f32(8))],
                       dict(epsilon=1e-5), 17),
    "layernorm_axis1_nobias": ("LayerNormalization", [X("x", f32(2, 5, 8)), C("s", f32(5, 8))], dict(axis=1), 17),
    "batchnorm": ("BatchNormalization", [X("x", x4), C("g", f32(4)), C("b", f32(4)), C("m", f32(4)),
                                         C("v", f32(4, lo=0.5))], dict(epsilon=1e-3), 15),
    # --- pooling / reduction ---
    "maxpool_k3s2p1": ("MaxPool", [X("x", x4)], dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), 12),
    "maxpool_ceil": ("MaxPool", [X("x", f32(1, 2, 8, 8))], dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1), 12),
    "maxpool_same_upper": ("MaxPool", [X("x", f32(1, 2, 8, 8))],
                           dict(kernel_shape=[2, 2], strides=[2, 2], auto_pad="SAME_UPPER"), 12),
    "maxpool_dilation": ("MaxPool", [X("x", x4)], dict(kernel_shape=[2, 2], dilations=[2, 2]), 12),
    "avgpool_exclude_pad": ("AveragePool", [X("x", x4)], dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1]), 11),
    "avgpool_include_pad": ("AveragePool", [X("x", x4)],
                            dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1), 11),
    "avgpool_ceil": ("AveragePool", [X("x", f32(1, 2, 8, 8))], dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1), 19),
    "globalavgpool": ("GlobalAveragePool", [X("x", x4)], {}, 13),
    "reducemean_attr_axes": ("ReduceMean", [X("x", f32(2, 3, 4))], dict(axes=[1, -1], keepdims=0), 13),
    "reducemean_input_axes": ("ReduceMean", [X("x", f32(2, 3, 4)), C("axes", i64(2))], {}, 18),
    "reducemean_all": ("ReduceMean", [X("x", f32(2, 3, 4))], {}, 18),
    # --- shape / data movement ---
    "flatten_axis2": ("Flatten", [X("x", f32(2, 3, 4, 5))], dict(axis=2), 13),
    "reshape_zero_minus1": ("Reshape", [X("x", f32(2, 3, 4)), C("s", i64(0, -1))], {}, 14),
    "transpose_perm": ("Transpose", [X("x", f32(2, 3, 4))], dict(perm=[1, 2, 0]), 13),
    "transpose_default": ("Transpose", [X("x", f32(2, 3, 4))], {}, 13),
    "concat_neg_axis": ("Concat", [X("a", f32(2, 3)), C("b", f32(2, 2)), X("c", f32(2, 1))], dict(axis=-1), 13),
    "gather_axis0": ("Gather", [X("x", f32(5, 3)), C("i", i64(4, 0, 2))], {}, 13),
    "gather_axis1_2d_neg": ("Gather", [X("x", f32(2, 5, 3)), C("i", np.array([[0, -1], [2, 3]], np.int64))],
                            dict(axis=1), 13),
    "gather_input_indices": ("Gather", [X("x", f32(6, 2)), X("i", i64(5, 1, 1))], {}, 13),
    "slice_steps_neg": ("Slice", [X("x", f32(6, 7)), C("st", i64(-1, 1)), C("en", i64(-7, 1000)), C("ax", i64(0, 1)),
                                  C("sp", i64(-2, 3))], {}, 13),
    "slice_no_axes": ("Slice", [X("x", f32(6, 7)), C("st", i64(1, -3)), C("en", i64(4, -1))], {}, 11),
    "slice_int_max": ("Slice", [X("x", f32(4, 5, 6)), C("st", i64(2)), C("en", i64(2**63 - 1)), C("ax", i64(-1))], {}, 13),
    "squeeze_attr": ("Squeeze", [X("x", f32(1, 3, 1, 2))], dict(axes=[0, -2]), 11),
    "squeeze_input": ("Squeeze", [X("x", f32(1, 3, 1, 2)), C("a", i64(2))], {}, 13),
    "squeeze_all": ("Squeeze", [X("x", f32(1, 3, 1, 2))], {}, 13),
    "unsqueeze_attr": ("Unsqueeze", [X("x", f32(3, 2))], dict(axes=[0, 3]), 11),
    "unsqueeze_input_neg": ("Unsqueeze", [X("x", f32(3, 2)), C("a", i64(-1, 1))], {}, 13),
    "pad_constant": ("Pad", [X("x", f32(1, 2, 3, 3)), C("p", i64(0, 0, 1, 2, 0, 0, 2, 1)), C("v", np.float32(1.5))],
                     {}, 11),
    "pad_reflect": ("Pad", [X("x", f32(1, 2, 4, 4)), C("p", i64(0, 0, 1, 2, 0, 0, 2, 1))], dict(mode="reflect"), 13),
    "pad_edge": ("Pad", [X("x", f32(1, 2, 4, 4)), C("p", i64(0, 0, 1, 2, 0, 0, 2, 1))], dict(mode="edge"), 13),
    "pad_axes_18": ("Pad", [X("x", f32(1, 2, 4, 4)), C("p", i64(1, 0, 2, 3)), ("v", None, True), C("a", i64(2, 3))],
                    {}, 18),
    "resize_nearest_asym_floor": ("Resize", [X("x", f32(1, 2, 3, 4)), ("roi", None, True),
                                             C("sc", np.array([1, 1, 2, 2], np.float32))],
                                  dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"), 13),
    "resize_nearest_sizes_half_pixel": ("Resize", [X("x", f32(1, 2, 5, 4)), ("roi", None, True), ("sc", None, True),
                                                   C("sz", i64(1, 2, 8, 7))], dict(mode="nearest"), 13),
    "resize_nearest_prefer_ceil": ("Resize", [X("x", f32(1, 1, 4, 4)), ("roi", None, True),
                                              C("sc", np.array([1, 1, 1.5, 1.5], np.float32))],
                                   dict(mode="nearest", nearest_mode="round_prefer_ceil"), 13),
    "resize_linear_half_pixel": ("Resize", [X("x", f32(1, 2, 3, 4)), ("roi", None, True),
                                            C("sc", np.array([1, 1, 2, 2], np.float32))], dict(mode="linear"), 13),
    "resize_linear_align_corners": ("Resize", [X("x", f32(1, 2, 3, 4)), ("roi", None, True), ("sc", None, True),
                                               C("sz", i64(1, 2, 7, 5))],
                                    dict(mode="linear", coordinate_transformation_mode="align_corners"), 13),
    "resize_linear_pytorch_down": ("Resize", [X("x", f32(1, 2, 8, 8)), ("roi", None, True),
                                              C("sc", np.array([1, 1, 0.5, 0.5], np.float32))],
                                   dict(mode="linear", coordinate_transformation_mode="pytorch_half_pixel"), 13),
    "resize_opset11_roi": ("Resize", [X("x", f32(1, 2, 3, 4)), C("roi", np.zeros(0, np.float32)),
                                      C("sc", np.array([1, 1, 2, 3], np.float32))], dict(mode="nearest"), 11),
    "resize_axes_18": ("Resize", [X("x", f32(1, 2, 3, 4)), ("roi", None, True), C("sc", np.array([2, 2], np.float32))],
                       dict(mode="linear", axes=[2, 3]), 18),
    # --- math, comparisons, selection ---
    "exp": ("Exp", [X("x", f32(3, 5))], {}, 13),
    "log": ("Log", [X("x", f32(3, 5, lo=0.1, hi=4))], {}, 13),
    "abs": ("Abs", [X("x", f32(3, 5))], {}, 13),
    "abs_int64": ("Abs", [X("x", i64(-3, 0, 7))], {}, 13),
    "neg": ("Neg", [X("x", f32(3, 5))], {}, 13),
    "not": ("Not", [X("x", R.integers(0, 2, (3, 4)).astype(np.bool_))], {}, 7),
    "sum_3_bcast": ("Sum", [X("a", f32(2, 3, 4)), C("b", f32(4)), X("c", f32(3, 1))], {}, 13),
    "sum_1": ("Sum", [X("a", f32(2, 3))], {}, 8),
    "equal_int64": ("Equal", [X("a", i64(1, 2, 3, 4)), C("b", i64(3))], {}, 13),
    "equal_float": ("Equal", [X("a", ties(3, 4)), X("b", ties(4))], {}, 13),
    "less": ("Less", [X("a", f32(2, 3, 4)), X("b", f32(3, 1))], {}, 13),
    "greater": ("Greater", [X("a", f32(2, 3, 4)), C("b", np.float32(0.5))], {}, 13),
    "where_bcast": ("Where", [X("c", R.integers(0, 2, (3, 1)).astype(np.bool_)), X("x", f32(2, 3, 4)),
                              C("y", np.float32(-7))], {}, 16),
    "where_int64": ("Where", [X("c", R.integers(0, 2, (4,)).astype(np.bool_)), X("x", i64(1, 2, 3, 4)),
                              X("y", i64(-1, -2, -3, -4))], {}, 9),
    # --- activations built from compositions ---
    "prelu_per_channel": ("PRelu", [X("x", x4), C("s", f32(4, 1, 1))], {}, 16),
    "prelu_scalar": ("PRelu", [X("x", f32(3, 5)), C("s", np.float32(0.25))], {}, 9),
    "elu": ("Elu", [X("x", f32(3, 5, lo=-6, hi=3))], dict(alpha=0.7), 7),
    "selu": ("Selu", [X("x", f32(3, 5, lo=-6, hi=3))], {}, 7),
    "selu_attrs": ("Selu", [X("x", f32(3, 5))], dict(alpha=2.0, gamma=3.0), 7),
    "softplus": ("Softplus", [X("x", f32(3, 5, lo=-30, hi=30))], {}, 7),
    "mish": ("Mish", [X("x", f32(3, 5, lo=-8, hi=8))], {}, 18),
    # --- normalization ---
    "instancenorm": ("InstanceNormalization", [X("x", x4), C("s", f32(4)), C("b", f32(4))], dict(epsilon=1e-4), 7),
    "instancenorm_3d": ("InstanceNormalization", [X("x", f32(2, 3, 7)), C("s", f32(3)), C("b", f32(3))], {}, 7),
    "lrn": ("LRN", [X("x", f32(1, 6, 4, 4))], dict(size=3, alpha=1e-2, beta=0.75, bias=2.0), 13),
    "lrn_size5_defaults": ("LRN", [X("x", f32(1, 7, 3, 3))], dict(size=5), 13),
    # --- reductions ---
    "reducesum_input_axes": ("ReduceSum", [X("x", f32(2, 3, 4)), C("a", i64(0, 2))], {}, 13),
    "reducesum_attr_axes": ("ReduceSum", [X("x", f32(2, 3, 4))], dict(axes=[1], keepdims=0), 11),
    "reducesum_noop": ("ReduceSum", [X("x", f32(2, 3))], dict(noop_with_empty_axes=1), 13),
    "reducesum_int64": ("ReduceSum", [X("x", R.integers(-9, 9, (3, 4)).astype(np.int64)), C("a", i64(-1))], {}, 13),
    "reducemax": ("ReduceMax", [X("x", f32(2, 3, 4))], dict(axes=[1, 2]), 13),
    "reducemin_all": ("ReduceMin", [X("x", f32(2, 3, 4))], dict(keepdims=0), 13),
    "reduceprod": ("ReduceProd", [X("x", f32(2, 3, 4, lo=0.5, hi=1.5)), C("a", i64(-1))], {}, 18),
    "reducel1": ("ReduceL1", [X("x", f32(2, 3, 4))], dict(axes=[2]), 13),
    "reducel2": ("ReduceL2", [X("x", f32(2, 3, 4)), C("a", i64(1))], dict(keepdims=0), 18),
    "reducesumsquare": ("ReduceSumSquare", [X("x", f32(2, 3, 4))], dict(axes=[0]), 13),
    "reducelogsum": ("ReduceLogSum", [X("x", f32(2, 3, 4, lo=0.1))], dict(axes=[2]), 13),
    "reducelogsumexp": ("ReduceLogSumExp", [X("x", f32(2, 3, 4, lo=-50, hi=90))], dict(axes=[1], keepdims=0), 13),
    "argmax_ties": ("ArgMax", [X("x", ties(3, 5))], dict(axis=1), 13),
    "argmax_last_index": ("ArgMax", [X("x", ties(3, 5))], dict(axis=-1, keepdims=0, select_last_index=1), 13),
    "argmin_axis0": ("ArgMin", [X("x", ties(4, 3))], {}, 13),
    "cumsum": ("CumSum", [X("x", f32(2, 5)), C("a", i64(1))], {}, 14),
    "cumsum_exclusive_reverse": ("CumSum", [X("x", f32(4, 3)), C("a", np.int32(0))], dict(exclusive=1, reverse=1), 14),
    "cumsum_int64": ("CumSum", [X("x", i64(1, 5, -2, 7)), C("a", i64(0))], dict(exclusive=1), 14),
    # --- shape / data movement, more ---
    "expand": ("Expand", [X("x", f32(3, 1)), C("s", i64(2, 1, 4))], {}, 13),
    "tile": ("Tile", [X("x", f32(2, 3)), C("r", i64(2, 3))], {}, 13),
    "tile_int64_3d": ("Tile", [X("x", i64(1, 2)), C("r", i64(3))], {}, 13),
    "depthtospace_dcr": ("DepthToSpace", [X("x", f32(1, 8, 2, 3))], dict(blocksize=2), 13),
    "depthtospace_crd": ("DepthToSpace", [X("x", f32(1, 8, 2, 3))], dict(blocksize=2, mode="CRD"), 13),
    "spacetodepth": ("SpaceToDepth", [X("x", f32(1, 2, 4, 6))], dict(blocksize=2), 13),
    "onehot": ("OneHot", [X("i", i64(0, 2, -1, 3)), C("d", i64(4)), C("v", np.array([0.5, 2.0], np.float32))], {}, 11),
    "onehot_axis0": ("OneHot", [X("i", np.array([[1, 0], [2, 2]], np.int64)), C("d", i64(3)),
                                C("v", i64(0, 1))], dict(axis=0), 11),
    "einsum_matmul": ("Einsum", [X("a", f32(3, 4)), X("b", f32(4, 5))], dict(equation="ij,jk->ik"), 12),
    "einsum_attention": ("Einsum", [X("q", f32(2, 3, 4, 8)), X("k", f32(2, 3, 5, 8))],
                         dict(equation="bhid,bhjd->bhij"), 12),
    "einsum_const_weight": ("Einsum", [X("x", f32(2, 3, 6)), C("w", f32(4, 6))], dict(equation="bid,jd->bij"), 12),
    "einsum_out_transposed": ("Einsum", [X("a", f32(2, 3, 4)), X("b", f32(2, 4, 5))],
                              dict(equation="bij,bjk->kbi"), 12),
    "einsum_transpose": ("Einsum", [X("a", f32(2, 3, 4))], dict(equation="abc->cab"), 12),
    # --- quantization ---
    "quantize_uint8": ("QuantizeLinear", [X("x", f32(2, 8, lo=-3, hi=3)), C("s", np.float32(0.02)),
                                          C("z", np.uint8(128))], {}, 13),
    "quantize_int8_per_axis": ("QuantizeLinear", [X("x", f32(2, 3, 4)), C("s", np.array([0.01, 0.02, 0.05], np.float32)),
                                                  C("z", np.array([0, 3, -2], np.int8))], dict(axis=1), 13),
    "quantize_default_zp": ("QuantizeLinear", [X("x", f32(2, 8, lo=-3, hi=3)), C("s", np.float32(0.03))], {}, 13),
    "dequantize_uint8": ("DequantizeLinear", [X("x", R.integers(0, 255, (2, 8)).astype(np.uint8)),
                                              C("s", np.float32(0.02)), C("z", np.uint8(120))], {}, 13),
    "dequantize_int8_per_axis": ("DequantizeLinear", [X("x", R.integers(-128, 127, (3, 4)).astype(np.int8)),
                                                      C("s", np.array([0.1, 0.2, 0.3, 0.4], np.float32)),
                                                      C("z", np.array([0, 1, -1, 2], np.int8))], dict(axis=1), 21),
    "qlinear_conv": ("QLinearConv", [X("x", R.integers(0, 255, (1, 2, 5, 5)).astype(np.uint8)),
                                     C("xs", np.float32(0.05)), C("xz", np.uint8(128)),
                                     C("w", R.integers(-127, 127, (3, 2, 3, 3)).astype(np.int8)),
                                     C("ws", np.array([0.01, 0.02, 0.015], np.float32)),
                                     C("wz", np.zeros(3, np.int8)), C("ys", np.float32(0.3)),
                                     C("yz", np.uint8(120)), C("b", np.array([-500, 40, 900], np.int32))],
                     dict(pads=[1, 1, 1, 1]), 13),
    "qlinear_matmul": ("QLinearMatMul", [X("a", R.integers(0, 255, (2, 4)).astype(np.uint8)),
                                         C("as", np.float32(0.05)), C("az", np.uint8(100)),
                                         C("b", R.integers(-127, 127, (4, 3)).astype(np.int8)),
                                         C("bs", np.float32(0.02)), C("bz", np.int8(0)),
                                         C("ys", np.float32(0.2)), C("yz", np.uint8(128))], {}, 13),
}

# cases with several outputs: (op, inputs, attrs, opset, number of outputs)
MULTI_OUT_CASES = {
    "split_attr_11": ("Split", [X("x", f32(2, 7))], dict(axis=1, split=[3, 4]), 11, 2),
    "split_input_13": ("Split", [X("x", f32(6, 2)), C("s", i64(1, 2, 3))], {}, 13, 3),
    "split_equal": ("Split", [X("x", f32(2, 6))], dict(axis=-1), 13, 3),
    "split_num_outputs_18": ("Split", [X("x", f32(7, 2))], dict(num_outputs=3), 18, 3),
    "dropout_mask": ("Dropout", [X("x", f32(2, 3)), C("r", np.float32(0.4))], {}, 13, 2),
    "topk_largest": ("TopK", [X("x", ties(3, 6)), C("k", i64(3))], {}, 11, 2),
    "topk_smallest_axis0": ("TopK", [X("x", ties(5, 2)), C("k", i64(2))], dict(axis=0, largest=0), 11, 2),
    "topk_int64": ("TopK", [X("x", R.integers(-5, 5, (2, 7)).astype(np.int64)), C("k", i64(4))], {}, 11, 2),
}


def _check(model, feeds, what):
    # onnxruntime's outputs, except qlinear_conv's on a CPU without VNNI, where onnxruntime
    # saturates pairwise sums in int16 and the exact int32 result is compared instead
    expected = ort_run_exact(model, feeds)
    graph, params = from_onnx(model)
    got = run(graph, params, feeds)
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        assert_close(g, e, rel=1e-5, what=f"{what} output {i}")
    fused = optimize(graph, params, layout_block=2)
    for i, (g, e) in enumerate(zip(run(fused.graph, fused.params, feeds), expected)):
        assert_close(g, e, rel=1e-5, what=f"{what} optimized output {i}")


@pytest.mark.parametrize("case", sorted(CASES))
def test_single_op_matches_onnxruntime(case):
    op, inputs, attrs, opset = CASES[case]
    model, feeds = single_node_model(op, inputs, attrs, opset)
    _check(model, feeds, case)


@pytest.mark.parametrize("case", sorted(MULTI_OUT_CASES))
def test_multi_output_op_matches_onnxruntime(case):
    op, inputs, attrs, opset, n_out = MULTI_OUT_CASES[case]
    model, feeds = single_node_model(op, inputs, attrs, opset, n_out=n_out)
    _check(model, feeds, case)


def test_every_converter_has_a_case():
    from compiler.frontend.onnx import SUPPORTED_OPS
    tested = {op for op, *_ in CASES.values()} | {op for op, *_ in MULTI_OUT_CASES.values()}
    folded_only = {"Shape", "ConstantOfShape", "Constant", "Range"}  # covered in test_onnx_frontend.py
    assert set(SUPPORTED_OPS) - tested - folded_only == set()
