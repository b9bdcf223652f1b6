"""Graph-level operators (`Op`) and their fusion pattern kinds (`Kind`).

One enum for every node of the graph IR; per-op behaviour (shape/type
inference, pattern kind, numpy reference) lives in `compiler.graph.opdefs`.
Attribute conventions are documented there, next to each op's definition.
"""

from __future__ import annotations

from enum import Enum, IntEnum, auto


class Kind(IntEnum):
    """Fusion pattern kind, ordered as TVM's `OpPatternKind` (lower fuses more freely)."""

    INJECTIVE = 2          # each output element reads a fixed set of input elements (elementwise, broadcast, data movement)
    REDUCTION = 3          # reduces over axes; may absorb injective producers
    OUT_EWISE_FUSABLE = 4  # complex op (conv, dense, pool) that absorbs following injective ops
    OPAQUE = 8             # never fused


class Op(Enum):
    # leaves
    INPUT = auto()    # graph input; name = tensor name
    PARAM = auto()    # constant from the params dict; name = key

    # elementwise unary
    RELU = auto()
    LEAKY_RELU = auto()   # alpha
    CLIP = auto()         # min, max (None = unbounded)
    SIGMOID = auto()
    TANH = auto()
    ERF = auto()
    GELU = auto()         # approximate: "none" | "tanh"
    HARD_SWISH = auto()
    SQRT = auto()
    EXP = auto()
    LOG = auto()
    ABS = auto()
    NEG = auto()
    NOT = auto()          # bool -> bool
    CAST = auto()         # to: dtype string

    # elementwise binary, numpy broadcasting
    ADD = auto()
    SUB = auto()
    MUL = auto()
    DIV = auto()
    POW = auto()

    # comparisons, numpy broadcasting, bool result
    EQUAL = auto()
    LESS = auto()
    GREATER = auto()

    # selection: src (condition bool, x, y), numpy broadcasting of all three
    WHERE = auto()

    # quantization (elementwise with per-tensor or per-axis scale / zero point)
    QUANTIZE = auto()     # src (x, scale, zero_point); axis, to
    DEQUANTIZE = auto()   # src (x, scale, zero_point); axis

    # data movement (injective)
    RESHAPE = auto()      # newshape
    TRANSPOSE = auto()    # perm
    SLICE = auto()        # begin, end, step (one per axis, normalized)
    CONCAT = auto()       # axis
    TAKE = auto()         # src (data, indices); axis
    BROADCAST_TO = auto() # shape (numpy broadcasting of the input to it: ONNX Expand)
    PAD = auto()          # pads (ONNX order: begins then ends), mode, value
    RESIZE = auto()       # mode, coordinate_transformation_mode, nearest_mode, scales
    LAYOUT_TRANSFORM = auto()  # src_layout, dst_layout, e.g. "NCHW" -> "NCHW16c"

    # normalization
    BATCH_NORM = auto()   # src (x, gamma, beta, mean, var); epsilon
    LAYER_NORM = auto()   # src (x, scale[, bias]); axis, epsilon
    SOFTMAX = auto()      # axis

    # reductions
    REDUCE_SUM = auto()        # axes, keepdims (all REDUCE_*: axes non-negative, distinct)
    REDUCE_MEAN = auto()       # axes, keepdims
    REDUCE_MAX = auto()        # axes, keepdims
    REDUCE_MIN = auto()        # axes, keepdims
    REDUCE_PROD = auto()       # axes, keepdims
    GLOBAL_AVG_POOL = auto()

    # complex, out-elementwise-fusable
    CONV2D = auto()            # strides, pads, dilations, groups, data_layout, kernel_layout
    CONV2D_TRANSPOSE = auto()  # strides, pads, dilations, groups, output_padding
    DENSE = auto()             # src (x[M,K], w[N,K])
    MATMUL = auto()            # numpy matmul semantics
    MAX_POOL = auto()          # kernel, strides, pads, dilations, ceil_mode
    AVG_POOL = auto()          # kernel, strides, pads, dilations, ceil_mode, count_include_pad

    # a fused group produced by `fuse_ops`; attrs: body (Graph), name, pattern (a Kind name)
    FUSED = auto()


LEAVES = frozenset({Op.INPUT, Op.PARAM})
UNARY = frozenset({Op.RELU, Op.LEAKY_RELU, Op.CLIP, Op.SIGMOID, Op.TANH, Op.ERF, Op.GELU,
                   Op.HARD_SWISH, Op.SQRT, Op.EXP, Op.LOG, Op.ABS, Op.NEG, Op.NOT, Op.CAST})
BINARY = frozenset({Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.POW})
COMPARE = frozenset({Op.EQUAL, Op.LESS, Op.GREATER})
REDUCE = frozenset({Op.REDUCE_SUM, Op.REDUCE_MEAN, Op.REDUCE_MAX, Op.REDUCE_MIN, Op.REDUCE_PROD})
