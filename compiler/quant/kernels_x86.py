"""Int8 CONV2D and DENSE steps tensorized onto x86 VNNI, and the choice among CPU int8 paths.

The same integer semantics as ``compiler.quant.kernels.conv2d`` / ``dense`` (and the oracle
``qgraph.eval_node``): ``acc = sum x * w + bias`` (int32, wrapping), ``y = clip(relu?((acc >>
shift) + zp), -128, 127)``, per-tensor or per-channel shifts, and a QDQ model's multipliers
(attrs ``mult``, ``post``: ``kernels._requant``). The inner products run as
``vpdpbusd`` (``compiler.topi.x86_int8``: u8 x s8 with the +128 offset, whose compensation
is folded into the bias at compile time); the requantization is the epilogue of each
accumulator row.

:data:`INT8_PATHS` is the registry of CPU int8 implementations, highest priority first,
each applicable where the target has its CPU features (``Target.features``, which the
module manifest records): ``amx`` (AMX tiles for the convs, ``compiler.quant.kernels_amx``;
VNNI for the rest), ``vnni512`` (AVX512-VNNI), ``vnni256`` (AVX-VNNI), and the plain
widening path of ``compiler.quant.kernels`` (every CPU). :func:`select` picks one.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from compiler import te
from compiler.topi import x86_int8 as vnni

from . import kernels, kernels_amx
from .kernels import _kernel, requant8
from .qgraph import QNode


def _bias(bias: np.ndarray, comp: np.ndarray, padded: int) -> np.ndarray:
    """bias - compensation, wrapping as int32, zero-padded to ``padded`` channels."""
    out = np.zeros(padded, np.int32)
    b = np.asarray(bias, np.int64) - comp.astype(np.int64)
    out[:len(b)] = ((b + 2**31) % 2**32 - 2**31).astype(np.int32)
    return out


def _epilogue(acc_value, b, o, requant):
    """int32 acc + bias (wrapping) -> int8 through ``requant`` (``kernels.requant8``: the
    shift and multiplier, or onnxruntime's float32 scale, then the output's zero point,
    relu, clip)."""
    s = te.cast(te.cast(acc_value, "uint32") + te.cast(b[o], "uint32"), "int32")
    return requant(s, o)


def conv2d(node: QNode, x_shape, weight: np.ndarray, bias: np.ndarray, lanes: int = 16,
           name="conv2d"):
    """Int8 CONV2D of NCHW ``x_shape`` (int8) with OIHW ``weight`` (int8), ``bias`` ((O,)
    int32) -> NCHW int8, on ``vpdpbusd`` with ``lanes`` int32 lanes (16: AVX512-VNNI, 8:
    AVX-VNNI). Returns a ``KernelDef`` (ABI as ``compiler.quant.kernels``)."""
    a = node.attrs
    O = weight.shape[0]
    packed, comp = vnni.pack_vnni_weight(weight, lanes)
    x = te.placeholder(x_shape, "int8", "x")
    w = te.placeholder(packed.shape, "int8", "w")
    b = te.placeholder((packed.shape[0] * lanes,), "int32", "bias")
    requant, tables = requant8(a, O, node.zp)
    xu = vnni.offset_input(x, a["padding"], name=name + "_xu", fill=a.get("pad_zp") or 0)
    acc = vnni.conv2d_acc(xu, w, a["strides"], name=name + "_acc")
    N, _, OH, OW, _ = acc.shape
    out = te.compute((N, O, OH, OW), lambda n, o, oh, ow: _epilogue(
        acc[n, o // lanes, oh, ow, o % lanes], b, o, requant), name=name)
    s = te.create_schedule(out)
    vnni.schedule_conv2d(s, acc, out, lanes)
    consts = [(w, packed), (b, _bias(bias, comp, packed.shape[0] * lanes))] + tables
    return _kernel(s, [x], out, "conv", consts, [xu])


def dense(node: QNode, x_shape, weight: np.ndarray, bias: np.ndarray, lanes: int = 16,
          name="dense"):
    """Int8 DENSE: ``x_shape`` (N, C) int8, ``weight`` (O, C) int8, ``bias`` (O,) int32 ->
    (N, O) int8 on ``vpdpbusd`` (as :func:`conv2d`)."""
    a = node.attrs
    O = weight.shape[0]
    packed, comp = vnni.pack_vnni_weight(weight, lanes)
    x = te.placeholder(x_shape, "int8", "x")
    w = te.placeholder(packed.shape, "int8", "w")
    b = te.placeholder((packed.shape[0] * lanes,), "int32", "bias")
    requant, tables = requant8(a, O, node.zp)
    xu = vnni.offset_input(x, name=name + "_xu")
    acc = vnni.dense_acc(xu, w, name=name + "_acc")
    out = te.compute((x_shape[0], O), lambda m, o: _epilogue(
        acc[m, o // lanes, o % lanes], b, o, requant), name=name)
    s = te.create_schedule(out)
    vnni.schedule_dense(s, acc, out, lanes)
    consts = [(w, packed), (b, _bias(bias, comp, packed.shape[0] * lanes))] + tables
    return _kernel(s, [x], out, "dense", consts, [xu])


@dataclass(frozen=True)
class Int8Path:
    """One CPU int8 implementation: its name, the LLVM features it needs (all of them), its
    conv2d and dense builders (``(node, x_shape, weight, bias, name=) -> KernelDef``)."""

    name: str
    features: tuple[str, ...]
    conv2d: Callable
    dense: Callable

    def why_not(self, features: str) -> "str | None":
        missing = [f for f in self.features if f not in set(features.split(","))]
        return f"target lacks {', '.join(missing)}" if missing else None


def _vnni(lanes: int, name: str, features: tuple[str, ...]) -> Int8Path:
    return Int8Path(name, features,
                    lambda *a, name="conv2d": conv2d(*a, lanes=lanes, name=name),
                    lambda *a, name="dense": dense(*a, lanes=lanes, name=name))


#: CPU int8 paths, highest priority first; the last, plain widening, applies everywhere
INT8_PATHS: tuple = (
    Int8Path("amx", ("+amx-int8", "+amx-tile", "+avx512vnni", "+avx512f"), kernels_amx.conv2d,
             lambda *a, name="dense": dense(*a, lanes=16, name=name)),
    _vnni(16, "vnni512", ("+avx512vnni", "+avx512f")),
    _vnni(8, "vnni256", ("+avxvnni",)),
    Int8Path("plain", (), kernels.conv2d, kernels.dense),
)


def select(features: str) -> Int8Path:
    """The first path of :data:`INT8_PATHS` whose features the LLVM feature string
    ``features`` (``Target.features``) has."""
    return next(p for p in INT8_PATHS if p.why_not(features) is None)
