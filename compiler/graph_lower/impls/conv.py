"""Convolutions: NCHW with packed weights, blocked NCHW{b}c, depthwise, grouped, transposed.

Shapes and layouts as in ``compiler.topi.conv2d``. Knobs (defaults are the
hand-picked schedule): ``conv_out_block`` (output channels per packed weight
block, a divisor of O: the channel block, 4 = one 128-bit fp32 vector; where no
vector block divides O, also 16 and 8 (at least one vector wide) with O padded up to a
multiple of the block, the one padding least the default: ``topi.conv2d.padded_out_block``),
``ow_tile`` (output columns per register tile, a cap: ``topi.conv2d`` picks a
divisor of OW near it), ``ow_vec`` (columns per vector of the depthwise-style
schedules, 4 = 128-bit; the depthwise default is 32 on 256- and 512-bit targets, 16 elsewhere),
``par_depth`` (outer axes fused into the parallel loop:
3 = (n, channel block, row), 2 = (n, channel block; and equal parts of the rows where
those are under ``topi.conv2d.MIN_PARALLEL_TASKS``), 0 = none: offered, and the
default, for direct convs under ``SERIAL_MACS``; the depthwise default is 2: one
fork-join per layer with the padded copy made per task, see ``schedule_depthwise_nchw``),
``algorithm`` (3x3 stride-1 convs with constant weights: ``direct`` or Winograd
``winograd2`` / ``winograd4``, ``compiler.topi.winograd``; default per shape, see
``_default_algorithm``; 1x1 stride-1 convs: ``direct`` or ``cols``, vectorised along
the output columns, ``topi.conv2d.schedule_conv2d_cols``, the default where a column
tile of whole vectors divides OW, see ``_cols_tile``).
"""
from __future__ import annotations

import math
from typing import NamedTuple

from compiler import te
from compiler.graph import Op
from compiler.topi import conv2d as tconv
from compiler.topi import depthwise_nchwc as tdw
from compiler.topi import winograd as twino
from compiler.tir import ir
from compiler.topi.injective import Lazy

from ..builder import view
from ..master import MasterKind
from ..space import ConfigSpace, Knob
from ..strategy import attr_is, register

_NCHW_DATA = attr_is("data_layout", "NCHW", "NCHW")
_OIHW = attr_is("kernel_layout", "OIHW", "OIHW")


def _NCHW(w):
    """NCHW data and an OIHW kernel (the plain layout)."""
    return _NCHW_DATA(w) or _OIHW(w)
_OW_TILE = Knob("ow_tile", (4, 7, 8, 14, 16, 28), 14)
#: accumulator vectors of the direct register tile, ``ceil(ob / lanes) x ow_tile``: the 16 x
#: 14 tile made for AVX-512 holds 14 (of 32 registers). On 256-bit targets a 16-channel
#: block takes two vectors per column, so the default tile there is 7 columns, not 14
#: (28 accumulators spill out of AVX2's 16 registers). MobileNetV2 (224) on AVX2
#: (znver1), 1 thread, per-layer thread CPU time, loaded machine, 14 -> 7 columns: 1x1
#: 32 -> 192 at 28x28 490 -> 410 us, 1x1 64 -> 384 at 14x14 935 -> 710 us, the 3x3 stem
#: 1377 -> 1130 us; ResNet-18's 3x3 convs 12.2 -> 8.3 ms (56x56), 5.9 -> 4.5 ms (28x28
#: stride 2), its 7x7 stem 11.5 -> 12.2 ms (the one loss), the whole model 178 -> 139 ms.
DIRECT_ACC_VECTORS = 14


def _direct_ow_tile(block: int, lanes: int) -> int:
    """The direct schedule's default ``ow_tile`` for channel block ``block``: the widest
    candidate whose tile keeps at most :data:`DIRECT_ACC_VECTORS` accumulator vectors, on
    256-bit and wider targets (narrower ones keep 14: not measured)."""
    if lanes < 8:
        return _OW_TILE.default
    cap = DIRECT_ACC_VECTORS // -(-block // lanes)
    return max(c for c in _OW_TILE.candidates if c <= max(cap, _OW_TILE.candidates[0]))


#: wasm32 (SIMD128; V8 on x86-64 has 16 vector registers): the register tile is two
#: vectors of output channels x 7 columns: 14 accumulators. Against the 16 x 14 tile made
#: for AVX-512 it runs ResNet-18 (224) in Node 1.6x faster (bench/deploy_wasm.py). NEON
#: (32 registers) keeps the default until it is measured.
_OW_TILE_WASM = Knob("ow_tile", _OW_TILE.candidates, 7)
_OW_VEC = Knob("ow_vec", (4, 8, 16, 32), 16)
_PAR = Knob("par_depth", (3, 2), 3)
#: convs smaller than this (multiply-adds) default to ``par_depth`` 0, one thread: on 2
#: threads each fork-join wakes the second thread from a futex sleep (about 17 us, see
#: ``schedule_depthwise_nchw``), as long as such a conv takes on one core (a 3x3 64 -> 64
#: conv at 7x7, 1.8 M MACs: 35 us at 1 thread, 48 us parallel on 2 against onnxruntime's
#: 37 us, bench/tune_models.py --parts layers). ResNet-18's and MobileNetV2's convs at 224
#: are all larger (the smallest, 4.8 M).
SERIAL_MACS = 2_000_000
_PAR_SERIAL = Knob("par_depth", (3, 2, 0), 0)
_PAR_DW = Knob("par_depth", (3, 2), 2)
#: the depthwise default on 256- and 512-bit targets: a cap of 32 columns per vector tile,
#: so ``topi.conv2d`` takes whole 28-column rows and 28 of 56 (one 28-lane vector) instead
#: of 14: fewer, longer loop trips per row. MobileNetV2 (224) at 1 thread,
#: loaded machine, per-layer CPU time, AVX-512: 56x56x144 260 -> 185 us, 28x28x192
#: 91 -> 66 us, the whole model 9.20 -> 8.86 ms; AVX2 (znver1): 56x56x144 751 -> 611 us,
#: 28x28x192 233 -> 173 us, 112x112x96 stride 2 1339 -> 1179 us, the rest unchanged.
#: 128-bit targets keep 16 (not measured).
_OW_VEC_DW_WIDE = 32


def _depthwise_space(w):
    wide = w.target.vector_lanes(32) >= 8
    vec = Knob("ow_vec", _OW_VEC.candidates, _OW_VEC_DW_WIDE) if wide else _OW_VEC
    return ConfigSpace((vec, _PAR_DW))


#: conv algorithm -> Winograd output tile m (None: direct); offered for 3x3 stride-1 convs
#: with constant weights. With Winograd, ``ow_tile`` is the GEMM's register tile (accumulator
#: vectors) and ``par_depth`` the output transform's parallel depth.
WINOGRAD_TILE = {"direct": None, "winograd2": 2, "winograd4": 4}
class WinogradDefault(NamedTuple):
    """The Winograd untuned default on one vector width: the default point's
    ``conv_out_block`` (``block``, channels) and ``ow_tile`` (``tile``: the GEMM's register
    tile in ``ob``-channel accumulators; ``topi.winograd.schedule_winograd_nchw`` takes
    ``ow_tile / 2`` tiles x 2 channel blocks), ``f4_from``, the smallest output side
    (min(OH, OW), elements) that takes F(4x4,3x3) (smaller ones take F(2x2,3x3)), and
    ``min_channels``, the fewest input and output channels that take Winograd (fewer:
    direct)."""

    block: int
    tile: int
    f4_from: int
    min_channels: int


#: fp32 vector lanes -> Winograd default, for fp32 convs with both channel counts >=
#: ``min_channels`` (bench/winograd.py, ResNet-18's four 3x3 shapes, loaded machines;
#: narrower targets keep the direct conv).
#: 512-bit (AMD EPYC znver4): 16 channels, 7 tiles x 2 zmm = 14 of 32 registers; speed-up
#: over direct at 1 / 2 threads: 56x56x64 F4 2.83x / 2.64x; 28x28x128 F4 3.34x / 3.14x;
#: 14x14x256 F2 2.18x / 1.07x; 7x7x512 F2 1.52x / 1.49x (F(4x4,3x3) no faster there and
#: rounds 20x worse).
#: 256-bit (AMD EPYC znver1, AVX2, 16 ymm): 8 channels, 4 tiles x 2 ymm = 8 accumulators beside
#: weights and broadcasts (the 512-bit point, 28 ymm, spills: F4 28x28x128 3.91 -> 2.44 ms;
#: 16 channels x 3 tiles, 12 ymm, is level at 28 and 56, 1.08-1.22x slower at 14 and 7);
#: F(4x4,3x3) at every size: ratio to onnxruntime at 1 thread (thread CPU time) / 2 threads
#: (wall): 56x56x64 0.39x / 0.17x; 28x28x128 0.35x / 0.39x; 14x14x256 0.46x / 0.52x (F2
#: 0.53x / 0.72x); 7x7x512 0.49x / 0.62x (F2 0.72x / 1.11x). Its rounding is 20x F2's on a
#: lone 7x7x512 conv (2.0e-5 relative) but ResNet-18 (224) ends as close to onnxruntime
#: as with F2 below 28 (1.0e-6 relative) and 1.05x faster (69.5 vs 73.0 ms CPU, 1 thread).
#: Below 64 channels on 256-bit (bench/tune_models.py's odd layers, quiet machine, direct ->
#: F(4x4,3x3) latency against onnxruntime at 1 / 2 threads): 24 channels at 56x56 1.45x /
#: 1.46x -> 0.49x / 0.48x, 40 at 28x28 1.40x / 1.30-1.55x -> 0.47x / 0.45x, 64 -> 21 at 14x14
#: 1.07x / 0.61-1.24x -> 0.56x / 0.57x (max error 7.1e-6 relative); 512-bit below 64 channels
#: is not measured and stays direct.
WINOGRAD_DEFAULTS = {16: WinogradDefault(16, 14, 28, 64), 8: WinogradDefault(8, 8, 1, 16)}


def _default_algorithm(w) -> str:
    n = w.node
    (O, C), (OH, OW) = n.src[1].shape[:2], n.shape[2:]
    wd = WINOGRAD_DEFAULTS.get(w.target.vector_lanes(32))
    if n.dtype != "float32" or wd is None or min(O, C) < wd.min_channels:
        return "direct"
    return "winograd4" if min(OH, OW) >= wd.f4_from else "winograd2"


#: the widest column tile of the ``cols`` algorithm (one 512-bit vector, two 256-bit ones)
COLS_MAX = 16
#: accumulator vectors of the ``cols`` register tile (``ob x cols / lanes``); MobileNetV2's
#: 1x1 16 -> 96 conv at 112x112 on AVX2 (thread CPU time, loaded machine): ob 4 x 2 vectors
#: 1700 us, ob 8 x 2 2276 us, ob 2 x 2 1962 us
COLS_ACC_VECTORS = 8


def _pointwise(w) -> bool:
    """1x1, stride 1, no padding or dilation: the convs ``cols`` computes."""
    n = w.node
    return (tuple(n.src[1].shape[2:]) == (1, 1) and tuple(n.attr("strides", (1, 1))) == (1, 1)
            and tuple(n.attr("pads", (0, 0, 0, 0))) == (0, 0, 0, 0)
            and tuple(n.attr("dilations", (1, 1))) == (1, 1))


def _cols_tile(w) -> "int | None":
    """The ``cols`` default column tile: the widest multiple of the vector width up to
    :data:`COLS_MAX` that divides OW, on 256-bit and wider targets (None: none does, or a
    narrower target, where it is not measured). A tail tile would run scalar."""
    lanes, OW = w.target.vector_lanes(32), w.node.shape[3]
    if lanes < 8:
        return None
    fits = [c for c in range(lanes, COLS_MAX + 1, lanes) if OW % c == 0]
    return fits[-1] if fits else None


def _cols_block(O: int, cols: int, lanes: int) -> int:
    """The ``cols`` default channel block: the largest of 16, 8, 4, 2, 1 dividing O whose
    tile keeps at most :data:`COLS_ACC_VECTORS` accumulator vectors."""
    vecs = -(-cols // lanes)
    return next(b for b in (16, 8, 4, 2, 1) if O % b == 0 and b * vecs <= COLS_ACC_VECTORS)


def _window(n):
    return (n.attr("strides", (1, 1)), n.attr("pads", (0, 0, 0, 0)), n.attr("dilations", (1, 1)))


def _winograd_applies(w) -> bool:
    """3x3, stride 1, no dilation, constant weights (transformed at compile time)."""
    n = w.node
    return (tuple(n.src[1].shape[2:]) == (3, 3) and tuple(n.attr("strides", (1, 1))) == (1, 1)
            and tuple(n.attr("dilations", (1, 1))) == (1, 1) and w.is_const(n.src[1]))


def _macs(n) -> int:
    """Multiply-adds of conv node ``n`` (groups 1): output elements x C x KH x KW."""
    _, C, KH, KW = n.src[1].shape
    return math.prod(n.shape) * C * KH * KW


def _conv_space(w):
    O = w.node.src[1].shape[0]
    par = _PAR_SERIAL if _macs(w.node) < SERIAL_MACS else _PAR
    lanes = w.target.vector_lanes(32)
    # where no vector block divides O, padded blocks first
    blocks = tconv.padded_blocks(O, lanes) + tuple(b for b in (16, 8, 4, 2, 1) if O % b == 0)
    padded = tconv.padded_out_block(O, lanes)
    if w.target.arch.startswith("wasm"):
        pair = 2 * lanes
        block = pair if O % pair == 0 else (padded or tconv.conv_out_block(O))
        return ConfigSpace((Knob("conv_out_block", blocks, block), _OW_TILE_WASM, par))
    direct = padded or tconv.conv_out_block(O)
    direct_tile = Knob("ow_tile", _OW_TILE.candidates, _direct_ow_tile(direct, lanes))
    if _pointwise(w):
        cols = _cols_tile(w)
        if not cols:
            return ConfigSpace((Knob("conv_out_block", blocks, direct), direct_tile, par,
                                Knob("algorithm", ("direct", "cols"), "direct")))
        return ConfigSpace((Knob("conv_out_block", blocks, _cols_block(O, cols, lanes)),
                            Knob("ow_tile", _OW_TILE.candidates, cols), par,
                            Knob("algorithm", ("direct", "cols"), "cols")))
    knobs = (Knob("conv_out_block", blocks, direct), direct_tile, par)
    if not _winograd_applies(w):
        return ConfigSpace(knobs)
    algorithm = _default_algorithm(w)
    if algorithm != "direct":          # a Winograd default point: its block and GEMM tile
        wd = WINOGRAD_DEFAULTS[lanes]
        knobs = (Knob("conv_out_block", blocks, wd.block if wd.block in blocks else direct),
                 Knob("ow_tile", _OW_TILE.candidates, wd.tile), par)
    return ConfigSpace(knobs + (Knob("algorithm", tuple(WINOGRAD_TILE), algorithm),))


def _algorithm(cfg) -> str:
    return cfg.as_dict().get("algorithm", "direct")


def _schedule_conv2d_nchw(s, acc, out, cfg):
    if _algorithm(cfg) == "cols":
        return tconv.schedule_conv2d_cols(s, acc, out, cfg["conv_out_block"], cfg["ow_tile"],
                                          cfg["par_depth"])
    m = WINOGRAD_TILE[_algorithm(cfg)]
    if m is None:
        return tconv.schedule_conv2d_nchw(s, acc, out, cfg["ow_tile"], par_depth=cfg["par_depth"])
    return twino.schedule_winograd_nchw(s, acc, out, cfg["ow_tile"], cfg["par_depth"])


def _conv_packs(w, cfg):
    m = WINOGRAD_TILE.get(_algorithm(cfg))   # cols packs as direct
    return {1: f"conv:{cfg['conv_out_block']}" if m is None else f"wino{m}:{cfg['conv_out_block']}"}


@register(Op.CONV2D, "conv2d_nchw", kind=MasterKind.CONV2D, space=_conv_space,
          schedule=_schedule_conv2d_nchw, packs=_conv_packs,
          when=(_NCHW, attr_is("groups", 1, 1)))
def _conv2d_nchw(b, n, a, cfg):
    x = b.tensor_of(a[0], "conv_in")
    name = b.fresh("conv")
    m = WINOGRAD_TILE.get(_algorithm(cfg))
    if m is not None:                      # the space offers it for constant weights only
        w = a[1]._tensor
        acc, (V, M) = twino.winograd_conv2d_nchw(x, w, m, n.attr("pads", (0, 0, 0, 0)), name)
        b.workspace.extend((V, M))
        ob = w.shape[-1]
        return Lazy(n.shape, n.dtype, lambda nn, o, h, ww: acc[nn, o // ob, h, ww, o % ob]), acc
    if n.src[1] in b.packed:
        w = a[1]._tensor
    else:                                  # a computed weight: packed in the kernel
        ob = cfg["conv_out_block"]
        wt = b.tensor_of(a[1], "w")
        O, I, KH, KW = wt.shape
        zero = ir.const(0.0, wt.dtype)

        def wpack(oc, i, kh, kw, oi):      # zero channels past O (a padded block)
            o = oc * ob + oi
            if O % ob == 0:
                return wt[o, i, kh, kw]
            return te.if_then_else(o < O, wt[o, i, kh, kw], zero)
        w = te.compute((-(-O // ob), I, KH, KW, ob), wpack, name=b.fresh("wpack"))
        b.workspace.append(w)
    if _algorithm(cfg) == "cols":
        acc = tconv.conv2d_nchw_cols(x, w, n.shape[1], name=name)
        return view(acc), acc
    acc, _ = tconv.conv2d_nchw(x, w, *_window(n), name=name)
    ob = w.shape[-1]
    return Lazy(n.shape, n.dtype, lambda nn, o, h, ww: acc[nn, o // ob, h, ww, o % ob]), acc


def _blocked(w):
    n = w.node
    x, k = n.src[0].shape, n.src[1].shape
    if n.attr("data_layout", "NCHW") == "NCHW":
        return "data_layout is 'NCHW', needs NCHW{b}c"
    if len(x) != 5 or len(k) != 6 or not n.attr("kernel_layout", "OIHW").startswith("OIHW"):
        return (f"data {list(x)} / kernel {list(k)} in layout {n.attr('data_layout')}/"
                f"{n.attr('kernel_layout', 'OIHW')}, needs 5-D NCHW{{b}}c data and a 6-D "
                "OIHW{b}i{b}o kernel")
    return None


@register(Op.CONV2D, "conv2d_nchwc", kind=MasterKind.CONV2D_NCHWC,
          space=lambda w: ConfigSpace((_OW_TILE, _PAR)),
          schedule=lambda s, acc, out, cfg: tconv.schedule_conv2d_nchwc(s, acc, out, cfg["ow_tile"],
                                                                        cfg["par_depth"]),
          when=(_blocked, attr_is("groups", 1, 1)))
def _conv2d_nchwc(b, n, a, cfg):
    x = b.tensor_of(a[0], "conv_in")
    name = b.fresh("conv")
    acc = tconv.conv2d_nchwc(x, b.tensor_of(a[1], "w"), *_window(n), name=name)
    return view(acc), acc


def _nchw_to_blocked(w):
    """NCHW data, an ``OIHW{b}o`` kernel ``[O/b, C, KH, KW, b]`` (the packed NCHW kernel, made
    by the graph's constant layout transform), groups 1: the output in NCHW{b}c."""
    n = w.node
    k, kl = n.src[1].shape, n.attr("kernel_layout", "OIHW")
    if n.attr("data_layout", "NCHW") != "NCHW" or len(k) != 5 or kl != f"OIHW{k[-1]}o":
        return (f"data layout {n.attr('data_layout', 'NCHW')} / kernel {list(k)} in {kl}, "
                "needs NCHW data and an OIHW{b}o kernel")
    return None


def _nchw_to_blocked_space(w):
    n, lanes = w.node, w.target.vector_lanes(32)
    ob = n.src[1].shape[-1]
    par = _PAR_SERIAL if math.prod(n.shape) * n.src[0].shape[1] * math.prod(n.src[1].shape[2:4]) \
        < SERIAL_MACS else _PAR
    return ConfigSpace((Knob("ow_tile", _OW_TILE.candidates, _direct_ow_tile(ob, lanes)), par))


@register(Op.CONV2D, "conv2d_nchw_to_nchwc", kind=MasterKind.CONV2D_NCHWC,
          space=_nchw_to_blocked_space,
          schedule=lambda s, acc, out, cfg: tconv.schedule_conv2d_nchwc(s, acc, out, cfg["ow_tile"],
                                                                        cfg["par_depth"]),
          when=(_nchw_to_blocked, attr_is("groups", 1, 1)))
def _conv2d_nchw_to_nchwc(b, n, a, cfg):
    """The packed NCHW conv (``topi.conv2d.conv2d_nchw``) storing its blocked accumulator as
    the NCHW{b}c output, with no transpose back to NCHW: a stem over 3 channels (which no
    block divides) can start a blocked network without a transform after it."""
    x = b.tensor_of(a[0], "conv_in")
    acc, _ = tconv.conv2d_nchw(x, b.tensor_of(a[1], "w"), *_window(n), name=b.fresh("conv"))
    return view(acc), acc


def _depthwise(w):
    n = w.node
    g, C, per_group = n.attr("groups", 1), n.src[0].shape[1], n.src[1].shape[1]
    if g == 1 or g != C or per_group != 1:
        return f"groups={g} over {C} channels with {per_group} per group, needs groups == channels > 1"
    return None


def _grouped(w):
    g = w.node.attr("groups", 1)
    return None if g > 1 else f"groups is {g}, needs > 1"


@register(Op.CONV2D, "depthwise_conv2d_nchw", kind=MasterKind.DEPTHWISE_CONV2D,
          space=_depthwise_space,
          schedule=lambda s, acc, out, cfg: tconv.schedule_depthwise_nchw(s, acc, out, cfg["ow_vec"],
                                                                          cfg["par_depth"]),
          when=(_NCHW, _depthwise), plevel=15)
def _depthwise_conv2d_nchw(b, n, a, cfg):
    x = b.tensor_of(a[0], "conv_in")
    name = b.fresh("conv")
    acc = tconv.depthwise_conv2d_nchw(x, b.tensor_of(a[1], "w"), *_window(n), name=name)
    return view(acc), acc


def _depthwise_blocked(w):
    """NCHW{b}c data, an ``OIHW{b}o`` kernel ``[C/b, 1, KH, KW, b]``, groups == channels."""
    n = w.node
    x, k, dl = n.src[0].shape, n.src[1].shape, n.attr("data_layout", "NCHW")
    if len(x) != 5 or dl != f"NCHW{x[4]}c" or n.attr("kernel_layout", "OIHW") != f"OIHW{x[4]}o":
        return (f"data {list(x)} in layout {dl} / kernel layout {n.attr('kernel_layout', 'OIHW')}, "
                "needs NCHW{b}c data and an OIHW{b}o kernel")
    if len(k) != 5 or k[1] != 1 or n.attr("groups", 1) != x[1] * x[4]:
        return (f"kernel {list(k)} with groups={n.attr('groups', 1)} over {x[1] * x[4]} channels, "
                "needs a depthwise kernel (groups == channels, one input channel per group)")
    return None


#: the blocked depthwise register tile: ``ow_tile`` columns of one ``b``-channel block each,
#: at most 7 columns and :data:`DW_ACC_VECTORS` accumulator vectors (beside the block's
#: weight vectors and the input loads). 7 columns of a one-vector block (8 channels on
#: AVX2, 16 on AVX-512) take 7 of AVX2's 16 registers; a 16-channel block on AVX2 takes two
#: vectors a column, and 7 columns (14 accumulators) spill: MobileNetV2 (224), AVX2
#: (znver1), 1 thread, per-layer thread CPU time, loaded machine, 4 columns against the
#: tuned 7-16: 56x56x144 931 -> 405 us, 112x112x32 552 -> 357 us, 112x112x96 stride 2
#: 583 -> 546 us, 28x28x192 190 -> 129 us (onnxruntime 501, 424, 489, 188 us).
DW_ACC_VECTORS = 8
_OW_TILE_DW_MAX = 7


def _depthwise_nchwc_space(w):
    vectors = -(-w.node.shape[4] // w.target.vector_lanes(32))
    cap = min(_OW_TILE_DW_MAX, max(DW_ACC_VECTORS // vectors, _OW_TILE.candidates[0]))
    tile = max(c for c in _OW_TILE.candidates if c <= cap)
    return ConfigSpace((Knob("ow_tile", _OW_TILE.candidates, tile), _PAR_DW))


@register(Op.CONV2D, "depthwise_conv2d_nchwc", kind=MasterKind.CONV2D_NCHWC,
          space=_depthwise_nchwc_space,
          schedule=lambda s, acc, out, cfg: tdw.schedule_depthwise_nchwc(s, acc, out, cfg["ow_tile"],
                                                                         cfg["par_depth"]),
          when=(_depthwise_blocked,), plevel=15)
def _depthwise_conv2d_nchwc(b, n, a, cfg):
    x = b.tensor_of(a[0], "conv_in")
    name = b.fresh("conv")
    acc = tdw.depthwise_conv2d_nchwc(x, b.tensor_of(a[1], "w"), *_window(n), name=name)
    return view(acc), acc


@register(Op.CONV2D, "group_conv2d_nchw", kind=MasterKind.GROUP_CONV2D,
          space=lambda w: ConfigSpace((_OW_VEC,)),
          # its own entry: today it reuses the column-vectorised depthwise template
          schedule=lambda s, acc, out, cfg: tconv.schedule_depthwise_nchw(s, acc, out, cfg["ow_vec"]),
          when=(_NCHW, _grouped))
def _group_conv2d_nchw(b, n, a, cfg):
    x = b.tensor_of(a[0], "conv_in")
    name = b.fresh("conv")
    acc = tconv.group_conv2d_nchw(x, b.tensor_of(a[1], "w"), *_window(n), n.attr("groups"), name=name)
    return view(acc), acc


@register(Op.CONV2D_TRANSPOSE, "conv2d_transpose_nchw", kind=MasterKind.CONV2D_TRANSPOSE,
          space=lambda w: ConfigSpace((_OW_VEC,)),
          # its own entry: today it reuses the column-vectorised depthwise template
          schedule=lambda s, acc, out, cfg: tconv.schedule_depthwise_nchw(s, acc, out, cfg["ow_vec"]))
def _conv2d_transpose_nchw(b, n, a, cfg):
    acc = tconv.conv2d_transpose_nchw(
        b.tensor_of(a[0], "convT_in"), b.tensor_of(a[1], "w"), *_window(n), n.attr("groups", 1),
        n.shape[2:], name=b.fresh("convT"))
    return view(acc), acc
