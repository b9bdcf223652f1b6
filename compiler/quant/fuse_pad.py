"""Folding a zero-point PAD into the CPU conv that reads it (the CPU route's pass).

A QDQ model's conv on an input at zero point ``zp != 0`` is imported as an INT8 PAD of value
``zp`` and a CONV2D of padding 0 (``qdq``: the accelerator's GEMM pads with 0). On the CPU
that is one more pass over the activations per conv (ResNet-18 u8s8: 19 PADs, 0.33 ms of
10). The CPU conv kernels pad as they lay out their input, with any value, so here each such
PAD folds into its convs (CONV2D, stride-1 DEPTHWISE): they read the PAD's source with ``padding``
(ph, pw) and attr ``pad_zp`` (``qgraph``: the padding reads that int8 value). The values
are the same integers (``eval_node`` pads explicitly), bit for bit. The accelerator keeps
the PAD.
"""
from __future__ import annotations

import dataclasses

from .qgraph import QGraph, QNode, QOp


def _spatial_pad(n: QNode) -> "tuple[int, int] | None":
    """(ph, pw) of an INT8 constant PAD of the rows and columns only, symmetric; else None."""
    if n.op is not QOp.INT8 or n.attrs.get("op") != "PAD":
        return None
    a = n.attrs["attrs"]
    pads = tuple(a.get("pads", ()))
    if a.get("mode", "constant") != "constant" or len(pads) != 8:
        return None
    if pads[:2] != (0, 0) or pads[4:6] != (0, 0) or pads[2:4] != pads[6:8]:
        return None
    return pads[2], pads[3]


def _takes_pad(n: QNode) -> bool:
    """A CONV2D, or a stride-1 DEPTHWISE, of padding 0. A strided DEPTHWISE keeps its PAD:
    its column-phase copy with border conditions ran slower than the PAD plus the plain
    copy (MobileNetV2's 112x112x96 stride 2, 1 thread: 0.65 ms against 0.41)."""
    if tuple(n.attrs.get("padding", (0, 0))) != (0, 0):
        return False
    return n.op is QOp.CONV2D or (n.op is QOp.DEPTHWISE
                                  and tuple(n.attrs.get("strides", (1, 1))) == (1, 1))


def fuse_pads(qg: QGraph) -> QGraph:
    """``qg`` with each spatial constant PAD (value in int8) whose every reader is a CONV2D
    or stride-1 DEPTHWISE of padding 0 (and which is no graph output) folded into those
    convs (module docstring)."""
    nodes, users = qg.nodes, {}
    for i, n in enumerate(nodes):
        for s in n.src:
            users.setdefault(s, []).append(i)
    fold = {}
    for i, n in enumerate(nodes):
        hw = _spatial_pad(n)
        readers = users.get(i, [])
        value = n.attrs["attrs"].get("value", 0) if hw else None
        if (hw is None or i in qg.outputs or not readers or value != int(value)
                or not -128 <= value <= 127):
            continue
        if all(_takes_pad(nodes[r]) and nodes[r].src[0] == i for r in readers):
            fold[i] = (hw, int(value))
    new, where = [], {}
    for i, n in enumerate(nodes):
        if i in fold:
            where[i] = where[n.src[0]]
            continue
        src = tuple(where[s] for s in n.src)
        if n.src and n.src[0] in fold:
            hw, value = fold[n.src[0]]
            n = dataclasses.replace(n, attrs=dict(n.attrs, padding=hw, pad_zp=value))
        where[i] = len(new)
        new.append(dataclasses.replace(n, src=src))
    return QGraph(new, [where[i] for i in qg.inputs], [where[o] for o in qg.outputs],
                  list(qg.output_names), qg.params)
