"""One FUSED graph node -> one scheduled ``te`` kernel (``KernelDef``).

A fused group is declared by walking its body in topological order:

* injective ops compose :class:`~compiler.topi.injective.Lazy` index
  functions (inlined, no loop nest of their own);
* the group's master (conv2d, dense, matmul, pooling, reduction, softmax,
  layer norm) becomes real ``te`` stages from ``compiler.topi``;
* the group's result is materialised as the kernel's output stage.

When everything after the master is elementwise on the master's shape
("aligned"), the output stage *is* the epilogue: the master's accumulator
is ``compute_at`` its column-tile loop, so bias, residual and activation
are applied to the register tile before it is stored. Otherwise the master
runs at the root and the output stage is an injective kernel reading it
(``compiler.graph_lower.schedule``).

Constant weights are re-laid out here, once, at compile time
(conv: ``OIHW -> [O/ob, I, KH, KW, ob]``; dense: ``[N, K] -> [N/nb, K, nb]``);
``KernelDef.arg_sources`` says, per buffer argument, which graph value (and
which packing) feeds it, so kernels of equally shaped layers are shared.

Kernel ABI: ``int32 name(void *arg0, ...)``: the group's inputs in ``node.src``
order, then compile-time constant tables (``KernelDef.constants``), then workspace buffers (padded copies, softmax stages: scratch the
runtime provides), then the output; all C-contiguous, in the shapes of
``KernelDef.arg_shapes``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from compiler import te
from compiler.graph import Graph, Node, Op
from compiler.graph.ops import BINARY
from compiler.topi import conv2d as tconv
from compiler.topi import dense as tdense
from compiler.topi import injective as inj
from compiler.topi import pooling as tpool
from compiler.topi import reduction as tred
from compiler.topi.injective import Lazy

from .schedule import schedule_group


class LoweringError(ValueError):
    """A fused group uses an operator or attribute the CPU lowering does not support."""


@dataclass
class KernelDef:
    """A scheduled kernel for one fused-group signature.

    Attributes:
        schedule: the ``te.Schedule``.
        args: te tensors in ABI order (inputs, workspaces, output).
        n_inputs: how many leading args are the group's inputs.
        packs: per input, None or a packing tag ("conv:<ob>", "dense:<nb>")
            applied to that (constant) input before it is passed.
        workspace: the workspace tensors (between the constants and the output).
        pattern: the group's pattern name.
        constants: compile-time tables (numpy arrays) passed right after the
            inputs (e.g. resize source indices and weights).
    """

    schedule: object
    args: list
    n_inputs: int
    packs: list
    workspace: list = field(default_factory=list)
    pattern: str = ""
    constants: list = field(default_factory=list)


def pack_param(value: np.ndarray, tag: str) -> np.ndarray:
    """Apply a packing tag from :class:`KernelDef` to a constant."""
    kind, b = tag.split(":")
    if kind == "conv":
        return tconv.pack_conv_kernel(value, int(b))
    if kind == "dense":
        return tdense.pack_dense_weight(value, int(b))
    if kind == "dense_t":
        return tdense.pack_dense_weight(np.ascontiguousarray(value.T), int(b))
    raise ValueError(f"unknown packing tag {tag!r}")


def signature(node: Node) -> tuple:
    """Cache key of a FUSED node: its body (structural) and, per input, shape, dtype and
    whether it is a constant (constants may be packed)."""
    return (node.attr("body"),
            tuple((s.shape, s.dtype, s.op is Op.PARAM) for s in node.src))


def _packing(body: Graph, is_param: list) -> dict:
    """Input index -> packing tag, for conv / dense weights that are graph constants."""
    index = {n: i for i, n in enumerate(body.inputs)}
    packs = {}
    for n in body.nodes():
        if n.op is Op.CONV2D and n.attr("groups", 1) == 1 and n.attr("data_layout", "NCHW") == "NCHW":
            w = n.src[1]
            if w in index and is_param[index[w]]:
                packs[index[w]] = f"conv:{tconv.conv_out_block(w.shape[0])}"
        elif n.op is Op.DENSE:
            w = n.src[1]
            if w in index and is_param[index[w]]:
                packs[index[w]] = f"dense:{tdense.dense_block(w.shape[0])}"
        elif n.op is Op.MATMUL and len(n.src[1].shape) == 2 and len(n.src[0].shape) >= 2:
            w = n.src[1]
            if w in index and is_param[index[w]]:
                packs[index[w]] = f"dense_t:{tdense.dense_block(w.shape[1])}"
    return packs


def _packed_shape(shape, tag):
    kind, b = tag.split(":")
    b = int(b)
    if kind == "conv":
        O, I, KH, KW = shape
        return (O // b, I, KH, KW, b)
    if kind == "dense":
        N, K = shape
        return (N // b, K, b)
    K, N = shape
    return (N // b, K, b)


class _Builder:
    def __init__(self, name: str):
        self.name = name
        self.count = 0
        self.workspace: list = []
        self.constants: list = []   # (placeholder, numpy array): compile-time tables
        self.master = None   # (kind, acc tensor, master node, extra)

    def fresh(self, base: str) -> str:
        self.count += 1
        return f"{base}{self.count}"

    def constant(self, value: np.ndarray) -> Lazy:
        """A compile-time table passed to the kernel as an extra (constant) input."""
        value = np.ascontiguousarray(value)
        ph = te.placeholder(value.shape, str(value.dtype), f"c{len(self.constants)}")
        self.constants.append((ph, value))
        return _view(ph)

    def tensor_of(self, x: Lazy, name: str):
        """A te tensor holding ``x`` (the placeholder itself when ``x`` is one)."""
        if getattr(x, "_tensor", None) is not None:
            return x._tensor
        t = x.materialize(self.fresh(name))
        self.workspace.append(t)
        return t


def _view(t) -> Lazy:
    lz = Lazy.of(t)
    object.__setattr__(lz, "_tensor", t)
    return lz


def lower_group(node: Node, name: str) -> KernelDef:
    """Declare and schedule the kernel of FUSED ``node`` (see the module docstring).

    Raises:
        LoweringError: an operator or attribute value without a CPU lowering.
    """
    body: Graph = node.attr("body")
    is_param = [s.op is Op.PARAM for s in node.src]
    packs = _packing(body, is_param)
    placeholders = []
    env: dict = {}
    for i, inp in enumerate(body.inputs):
        shape = _packed_shape(inp.shape, packs[i]) if i in packs else inp.shape
        if shape == ():
            # 0-d tensors travel as one element (the loop IR indexes with at least one axis)
            ph = te.placeholder((1,), inp.dtype, f"p{i}")
            env[inp] = Lazy((), inp.dtype, lambda ph=ph: ph[0])
        else:
            ph = te.placeholder(shape, inp.dtype, f"p{i}")
            env[inp] = _view(ph)
        placeholders.append(ph)
    b = _Builder(name)
    packed_inputs = {body.inputs[i]: tag for i, tag in packs.items()}
    for n in body.nodes():
        if n in env:
            continue
        env[n] = _emit(b, n, [env[s] for s in n.src], packed_inputs)
    root = body.outputs[0]
    result = env[root]
    s, out = schedule_group(b, body, root, result)
    workspace = [t for t in b.workspace if t is not out]
    args = placeholders + [ph for ph, _ in b.constants] + workspace + [out]
    return KernelDef(s, args, len(placeholders), [packs.get(i) for i in range(len(placeholders))],
                     workspace, node.attr("pattern"), [v for _, v in b.constants])


# ------------------------------------------------------------------ declaring
def _emit(b: _Builder, n: Node, a: list, packed_inputs: dict):
    op, at = n.op, n.attr_dict
    if op is Op.RELU:
        return inj.relu(a[0])
    if op is Op.LEAKY_RELU:
        return inj.leaky_relu(a[0], at["alpha"])
    if op is Op.CLIP:
        return inj.clip(a[0], at.get("min"), at.get("max"))
    if op is Op.SIGMOID:
        return inj.sigmoid(a[0])
    if op is Op.TANH:
        return inj.tanh(a[0])
    if op is Op.ERF:
        return inj.erf(a[0])
    if op is Op.GELU:
        return inj.gelu(a[0], at.get("approximate", "none"))
    if op is Op.HARD_SWISH:
        return inj.hard_swish(a[0])
    if op is Op.SQRT:
        return inj.sqrt(a[0])
    if op is Op.CAST:
        return inj.cast(a[0], str(np.dtype(at["to"])))
    if op in BINARY:
        return inj.binary(op.name, a[0], a[1], n.shape)
    if op is Op.RESHAPE:
        return inj.reshape(a[0], n.shape)
    if op is Op.TRANSPOSE:
        return inj.transpose(a[0], at["perm"])
    if op is Op.SLICE:
        return inj.strided_slice(a[0], at["begin"], at["step"], n.shape)
    if op is Op.CONCAT:
        return inj.concat(a, at["axis"], n.shape)
    if op is Op.PAD:
        return inj.pad(a[0], at["pads"], at.get("mode", "constant"), at.get("value", 0.0))
    if op is Op.TAKE:
        return inj.take(a[0], a[1], at["axis"])
    if op is Op.LAYOUT_TRANSFORM:
        return inj.layout_transform(a[0], at["src_layout"], at["dst_layout"], n.shape)
    if op is Op.QUANTIZE:
        return inj.quantize(a[0], a[1], a[2], at.get("axis", 1), str(np.dtype(at["to"])))
    if op is Op.DEQUANTIZE:
        return inj.dequantize(a[0], a[1], a[2], at.get("axis", 1))
    if op is Op.RESIZE:
        tables = [(ax, b.constant(i0), None if i1 is None else b.constant(i1),
                   None if w is None else b.constant(w))
                  for ax, i0, i1, w in inj.resize_tables(n.src[0].shape, at)]
        return inj.resize(a[0], n.shape, tables)
    if op is Op.BATCH_NORM:
        x, gamma, beta, mean, var = a
        d = x.dtype
        eps = inj.const(at["epsilon"], d)

        def bn(*idx):
            c = idx[1]
            return (x(*idx) - mean(c)) / inj.te.sqrt(var(c) + eps) * gamma(c) + beta(c)
        return Lazy(n.shape, d, bn)
    if op is Op.CONV2D:
        return _conv(b, n, a, packed_inputs)
    if op is Op.DENSE:
        return _dense(b, n, a, packed_inputs)
    if op is Op.MATMUL:
        return _matmul(b, n, a, packed_inputs)
    if op is Op.CONV2D_TRANSPOSE:
        t = tconv.conv2d_transpose_nchw(
            b.tensor_of(a[0], "convT_in"), b.tensor_of(a[1], "w"), at.get("strides", (1, 1)),
            at.get("pads", (0, 0, 0, 0)), at.get("dilations", (1, 1)), at.get("groups", 1),
            n.shape[2:], name=b.fresh("convT"))
        b.master = ("dwconv", t, n, None)
        return _view(t)
    if op in (Op.MAX_POOL, Op.AVG_POOL):
        x = b.tensor_of(a[0], "pool_in")
        t = tpool.pool2d(x, "max" if op is Op.MAX_POOL else "avg", at["kernel"], at.get("strides", (1, 1)),
                         at.get("pads", (0, 0, 0, 0)), at.get("dilations", (1, 1)),
                         at.get("count_include_pad", 0), n.shape[2:], name=b.fresh("pool"))
        b.master = ("pool", t, n, None)
        return _view(t)
    if op is Op.GLOBAL_AVG_POOL:
        return _reduction(b, n, tred.global_avg_pool(a[0], b.fresh("gap")))
    if op is Op.REDUCE_MEAN:
        return _reduction(b, n, tred.reduce_mean(a[0], at["axes"], bool(at.get("keepdims", 1)),
                                                 b.fresh("mean")))
    if op is Op.SOFTMAX:
        return _reduction(b, n, tred.softmax(a[0], at["axis"], b.fresh("softmax")))
    if op is Op.LAYER_NORM:
        return _reduction(b, n, tred.layer_norm(a[0], a[1], a[2] if len(a) > 2 else None, at["axis"],
                                                at["epsilon"], b.fresh("ln")))
    raise LoweringError(f"operator {op.name} has no CPU lowering (node {n.label or n!r})")


def _reduction(b: _Builder, n: Node, t):
    b.master = ("reduce", t, n, None)
    return _view(t)


def _conv(b, n, a, packed_inputs):
    at = n.attr_dict
    strides, pads = at.get("strides", (1, 1)), at.get("pads", (0, 0, 0, 0))
    dil, groups = at.get("dilations", (1, 1)), at.get("groups", 1)
    x = b.tensor_of(a[0], "conv_in")
    w_node = n.src[1]
    name = b.fresh("conv")
    layout, klayout = at.get("data_layout", "NCHW"), at.get("kernel_layout", "OIHW")
    if layout != "NCHW":
        if len(x.shape) != 5 or len(w_node.shape) != 6 or groups != 1 or not klayout.startswith("OIHW"):
            raise LoweringError(f"CONV2D in layout {layout}/{klayout} with groups={groups}: only "
                                "NCHW{b}c data with OIHW{b}i{b}o kernels and groups=1 are lowered")
        acc = tconv.conv2d_nchwc(x, b.tensor_of(a[1], "w"), strides, pads, dil, name=name)
        b.master = ("convc", acc, n, None)
        return _view(acc)
    if groups == 1:
        if w_node in packed_inputs:
            w = a[1]._tensor
        else:
            ob = tconv.conv_out_block(w_node.shape[0])
            wt = b.tensor_of(a[1], "w")
            O, I, KH, KW = wt.shape
            w = te.compute((O // ob, I, KH, KW, ob),
                           lambda oc, i, kh, kw, oi: wt[oc * ob + oi, i, kh, kw], name=b.fresh("wpack"))
            b.workspace.append(w)
        acc, nchw = tconv.conv2d_nchw(x, w, strides, pads, dil, name=name)
        ob = w.shape[-1]
        b.master = ("conv", acc, n, None)
        return Lazy(n.shape, n.dtype, lambda nn, o, h, ww: acc[nn, o // ob, h, ww, o % ob])
    w = b.tensor_of(a[1], "w")
    C = x.shape[1]
    if groups == C and w.shape[1] == 1:
        t = tconv.depthwise_conv2d_nchw(x, w, strides, pads, dil, name=name)
    else:
        t = tconv.group_conv2d_nchw(x, w, strides, pads, dil, groups, name=name)
    b.master = ("dwconv", t, n, None)
    return _view(t)


def _lead_view(acc, shape):
    """Graph-shaped Lazy over a 2-D [M, N] accumulator (leading axes flattened into M)."""
    return inj.reshape(Lazy.of(acc), shape)


def _dense(b, n, a, packed_inputs):
    x = a[0]
    K = x.shape[-1]
    M = int(np.prod(x.shape[:-1]))
    x2 = inj.reshape(x, (M, K))
    w_node = n.src[1]
    if w_node in packed_inputs:
        w = a[1]._tensor
    else:
        wt = b.tensor_of(a[1], "w")
        N = wt.shape[0]
        nb = tdense.dense_block(N)
        w = te.compute((N // nb, K, nb), lambda jo, k, ji: wt[jo * nb + ji, k], name=b.fresh("wpack"))
        b.workspace.append(w)
    acc = _dense_compute(x2, w, b.fresh("dense"))
    b.master = ("dense", acc, n, None)
    return _lead_view(acc, n.shape)


def _dense_compute(x2: Lazy, w, name):
    M, K = x2.shape
    Nb, _, nb = w.shape
    k = te.reduce_axis(K, "k")
    return te.compute((M, Nb * nb), lambda i, j: te.sum(x2(i, k) * w[j // nb, k, j % nb], axis=k),
                      name=name)


def _matmul(b, n, a, packed_inputs):
    xa, xb = a
    sa, sb = n.src[0].shape, n.src[1].shape
    if len(sb) == 2 and n.src[1] in packed_inputs:
        K = sa[-1]
        M = int(np.prod(sa[:-1]))
        acc = _dense_compute(inj.reshape(xa, (M, K)), a[1]._tensor, b.fresh("dense"))
        b.master = ("dense", acc, n, None)
        return _lead_view(acc, n.shape)
    # numpy.matmul: a 1-D operand is a row (a) or a column (b) vector, dropped afterwards
    if len(sa) == 1:
        xa, sa = inj.reshape(xa, (1,) + sa), (1,) + sa
    if len(sb) == 1:
        xb, sb = inj.reshape(xb, sb + (1,)), sb + (1,)
    batch = tuple(np.broadcast_shapes(sa[:-2], sb[:-2]))
    B = int(np.prod(batch)) if batch else 1
    M, K, N = sa[-2], sa[-1], sb[-1]

    def operand(x: Lazy, shape):
        full = batch + tuple(shape[-2:])

        def f(bb, i, j):
            idx = inj._unflat(bb, batch) if batch else []
            return inj.broadcast_read(x, full, list(idx) + [i, j])
        return Lazy((B,) + tuple(shape[-2:]), x.dtype, f)
    A3, B3 = operand(xa, sa), operand(xb, sb)
    k = te.reduce_axis(K, "k")
    acc = te.compute((B, M, N), lambda bb, i, j: te.sum(A3(bb, i, k) * B3(bb, k, j), axis=k),
                     name=b.fresh("matmul"))
    b.master = ("bmm", acc, n, None)
    return inj.reshape(Lazy.of(acc), n.shape)
