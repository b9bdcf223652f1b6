"""Int8 CONV2D and DENSE steps tensorized onto x86 VNNI (the ``vnni512`` and ``vnni256`` paths).

The same integer semantics as ``generic.conv2d`` / ``dense`` (and the oracle
``qgraph.eval_node``): ``acc = sum x * w + bias`` (int32, wrapping), ``y = clip(relu?((acc >>
shift) + zp), -128, 127)``, per-tensor or per-channel shifts, and a QDQ model's multipliers
(attrs ``mult``, ``post``: ``common._requant``). The inner products run as
``vpdpbusd`` (``compiler.topi.x86_int8``: u8 x s8 with the +128 offset, whose compensation
is folded into the bias at compile time); the requantization is the epilogue of each
accumulator row.

"""
from __future__ import annotations

import numpy as np

from compiler import te
from compiler.topi import x86_int8 as vnni

from ..qgraph import QNode
from .common import _bias, _epilogue, _kernel, requant8


def conv2d(node: QNode, x_shape, weight: np.ndarray, bias: np.ndarray, lanes: int = 16,
           name="conv2d"):
    """Int8 CONV2D of NCHW ``x_shape`` (int8) with OIHW ``weight`` (int8), ``bias`` ((O,)
    int32) -> NCHW int8, on ``vpdpbusd`` with ``lanes`` int32 lanes (16: AVX512-VNNI, 8:
    AVX-VNNI). Returns a ``KernelDef`` (ABI as ``common.py``)."""
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
