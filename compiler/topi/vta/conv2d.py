"""Conv2d and dense on the accelerator: the schedule as loop IR, and ``conv2d_program``.

The schedule reads as VTA's (``vta/python/vta/top/vta_conv2d.py``), written
with the loop-IR constructors (``compiler.tir.ir``) rather than lowered from te
(``te_conv2d`` is that route, on the same code generator, bit-exact too): te's
tensorize refuses split tails, so tiles could not cover arbitrary shapes, and
the vthread pass interleaves the threads per copied element, which orders the
DMAs worse for overlap than grouping each thread's loads as here:

- the output tiles (batch block, ``th`` rows, ``tw`` columns, ``toc`` channel
  blocks; ``tiling.search``) form one loop, split into ``vt`` virtual threads
  (with ``Tiling.wres`` the channel tiles are an outer loop that loads their
  weights once into one WGT buffer, and the threads split the spatial tiles)
  (``For(..., thread="vthread")``, expanded by ``tir.passes.vthread``); each
  thread owns its SRAM tiles, so the code generator's tokens let one thread's
  DMA overlap the other's GEMM;
- per tile: reset the accumulator tile (GEMM reset; with the fused epilogue,
  ``fused_epilogue``, only in each thread's first tile, over the whole buffer:
  the REQUANT below leaves its entries zero), load the bias block into
  ACC (a DMA), then for each reduction step (``tic`` input-channel blocks x
  ``tkh`` kernel rows) cache the input tile into ``local.inp_buffer`` (a
  ``dma_copy`` whose zero padding the LOAD's pad fields make) and the weight
  tile into ``local.wgt_buffer``, and run the GEMM intrinsic over
  ``(oc, ic, kh, kw, y, x)`` in a uop scope (``y``, ``x`` fold into the GEMM
  loops); then ALU: with a bias, an immediate shift, no multiplier and no zero point,
  one REQUANT (``OUT = clip((acc + bias) >> shift)`` to int8 or, relu, [0, 127]; ACC =
  0); otherwise ADD bias, SHR shift (an immediate, or with per-channel weight
  scales a per-lane shift vector loaded into ACC like the bias and used as the
  ALU's tensor operand), [MUL by a multiplier (an immediate or a per-lane vector),
  SHR, ADD 2**14, SHR 15: a scale that is not a power of two, rounded; the
  multiplier is at most 15 bits because MUL keeps the low 32 bits of the product,
  so the first shift is a pre-shift that keeps the product in int32], [ADD the output's
  zero point (an immediate)], MAX the zero point (relu) or -128, MIN 127; then store the tile
  (a ``dma_copy`` from ``local.acc_buffer``; OUT holds the int8 truncation,
  exact after the clip).

``conv2d_program(cfg, data_shape, kernel_shape, strides, padding, shift, relu,
bias)`` returns a ``Conv2dKernel``: the ``Program`` plus pack/unpack helpers.
``dense_program`` is the same kernel with 1x1 images and kernels.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Callable

import numpy as np

from compiler import te
from compiler.codegen.vta import codegen as vta_codegen
from compiler.tir import dtype as dt
from compiler.tir import ir
from compiler.tir.ops import ForKind
from compiler.tir.passes.vthread import inject_virtual_thread
from vta_hw.alu import requant_imm
from vta_hw.config import VTAConfig
from vta_hw.program import Program
from vta_hw.timing import DramTiming

from . import intrin as I
from .environment import ACC_SCOPE, INP_SCOPE, WGT_SCOPE, Env
from .layout import (conv2d_reference, pack_bias, pack_nchw, pack_oihw, unpack_nchw)
from .tiling import Conv2dShape, Tiling, candidates


def _for(v: ir.Expr, extent, body: ir.Stmt, thread: str | None = None) -> ir.Stmt:
    return ir.For(v, ir.const(0), ir.convert(extent), ForKind.SERIAL, body, thread)


def _store(buf: ir.Buffer, value: ir.Expr, indices) -> ir.Stmt:
    return ir.Store(buf, value, tuple(ir.convert(i) for i in indices))


def _nest(names_extents, leaf_fn) -> ir.Stmt:
    vs = [ir.var(n) for n, _ in names_extents]
    body = leaf_fn(*vs)
    for v, (_, e) in reversed(list(zip(vs, names_extents))):
        body = _for(v, e, body)
    return body


def _unguard(st: ir.Stmt) -> ir.Stmt:
    if isinstance(st, ir.IfThenElse):
        return st.then_case
    if isinstance(st, ir.For):
        return ir.For(st.var, st.min, st.extent, st.kind, _unguard(st.body), st.thread)
    if isinstance(st, ir.SeqStmt):
        return ir.seq(*(_unguard(c) for c in st.stmts))
    return st


@dataclasses.dataclass(frozen=True)
class _Buffers:
    """The kernel's DRAM parameters and its SRAM tiles (shapes in ``conv2d_ir``)."""
    data: ir.Buffer
    kernel: ir.Buffer
    bias: ir.Buffer
    shift: ir.Buffer
    mult: ir.Buffer
    out: ir.Buffer
    inp: ir.Buffer        # the input tile of one reduction step, ``local.inp_buffer``
    wgt: ir.Buffer        # the weight tile (all the reduction with ``Tiling.wres``)
    acc: ir.Buffer        # the accumulator tile
    acc_bias: ir.Buffer   # one ACC vector of bias per output-channel block of the tile
    acc_shift: ir.Buffer  # one ACC vector of per-channel shifts likewise
    acc_mult: ir.Buffer   # and of per-channel multipliers


def _buffers(env: Env, s: Conv2dShape, t: Tiling) -> _Buffers:
    B, BI, BO = env.BATCH, env.BLOCK_IN, env.BLOCK_OUT
    rows_max, cols_max = t.rows_in(s), t.cols_in(s)
    wgt_n = t.toc * (s.CB * s.KH if t.wres else t.tic * t.tkh) * s.KW
    return _Buffers(
        data=ir.Buffer("data", "int8", (s.NB, s.CB, s.H, s.W, B, BI)),
        kernel=ir.Buffer("kernel", "int8", (s.OB, s.CB, s.KH, s.KW, BO, BI)),
        bias=ir.Buffer("bias", "int32", (s.OB, B, BO)),
        shift=ir.Buffer("shift", "int32", (s.OB, B, BO)),
        mult=ir.Buffer("mult", "int32", (s.OB, B, BO)),
        out=ir.Buffer("out", "int8", (s.NB, s.OB, s.OH, s.OW, B, BO)),
        inp=ir.Buffer("inp", "int8", (t.tic * rows_max * cols_max, B, BI), scope=INP_SCOPE),
        wgt=ir.Buffer("wgt", "int8", (wgt_n, BO, BI), scope=WGT_SCOPE),
        acc=ir.Buffer("acc", "int32", (t.toc * t.th * t.tw, B, BO), scope=ACC_SCOPE),
        acc_bias=ir.Buffer("acc_bias", "int32", (t.toc, B, BO), scope=ACC_SCOPE),
        acc_shift=ir.Buffer("acc_shift", "int32", (t.toc, B, BO), scope=ACC_SCOPE),
        acc_mult=ir.Buffer("acc_mult", "int32", (t.toc, B, BO), scope=ACC_SCOPE))


class _Tile:
    """Where the current tile and reduction step lie, as loop-IR expressions.

    Loop variables: ``outer`` and ``vt`` (the tile is ``outer * vt_count + vt``; with
    ``Tiling.wres`` also ``oc_tile``, the output-channel tile) and ``red`` (the reduction
    step: an input-channel block range times a kernel-row range). Output origin ``n``,
    ``oh0``, ``ow0``, ``oc0`` (rows, columns, channel blocks) and extents ``h``, ``w``,
    ``oc`` (clipped at the edges); the step's ``ic0``, ``kh0``, extents ``ic``, ``kh`` and
    its input window ``in_rows`` x ``in_cols`` from ``ih0``, ``iw0`` (may be negative: the
    padding). ``count`` tiles in all (per output-channel tile with ``wres``), ``steps``
    reduction steps.
    """

    def __init__(self, s: Conv2dShape, t: Tiling):
        n_oh, n_ow, n_oc = -(-s.OH // t.th), -(-s.OW // t.tw), -(-s.OB // t.toc)
        n_ic, n_kh = -(-s.CB // t.tic), -(-s.KH // t.tkh)
        self.n_oc = n_oc
        self.steps = n_ic * n_kh
        self.outer, self.vt, self.red = ir.var("tile.outer"), ir.var("vt"), ir.var("red")
        tile = self.index = self.outer * t.vt + self.vt
        if t.wres:
            # weights resident: an outer loop over output-channel tiles loads their weights
            # once (one buffer both threads read); the threads split the spatial tiles
            self.oc_tile = ir.var("oc.tile")
            self.count = s.NB * n_oh * n_ow
            self.n = tile // (n_oh * n_ow)
            self.oh0 = (tile // n_ow) % n_oh * t.th
            self.ow0 = tile % n_ow * t.tw
            self.oc0 = self.oc_tile * t.toc
        else:
            self.count = s.NB * n_oh * n_ow * n_oc
            self.n = tile // (n_oh * n_ow * n_oc)
            self.oh0 = (tile // (n_ow * n_oc)) % n_oh * t.th
            self.ow0 = (tile // n_oc) % n_ow * t.tw
            self.oc0 = tile % n_oc * t.toc
        self.h, self.w = ir.min_(t.th, s.OH - self.oh0), ir.min_(t.tw, s.OW - self.ow0)
        self.oc = ir.min_(t.toc, s.OB - self.oc0)
        self.ic0, self.kh0 = self.red // n_kh * t.tic, self.red % n_kh * t.tkh
        self.ic, self.kh = ir.min_(t.tic, s.CB - self.ic0), ir.min_(t.tkh, s.KH - self.kh0)
        self.in_rows, self.in_cols = (self.h - 1) * s.sh + self.kh, (self.w - 1) * s.sw + s.KW
        self.ih0, self.iw0 = self.oh0 * s.sh - s.ph + self.kh0, self.ow0 * s.sw - s.pw

    def acc_at(self, o, y, x):
        """The accumulator tile's element for channel block ``o``, row ``y``, column ``x``."""
        return o * self.h * self.w + y * self.w + x


class _Stmts:
    """The statements of one tile; every piece of work is guarded by its tile (the guard
    sits at the leaves, so the virtual threads interleave inside the reduction loop)."""

    def __init__(self, env: Env, s: Conv2dShape, t: Tiling, bufs: _Buffers, tile: _Tile):
        self.env, self.s, self.t, self.b, self.tile = env, s, t, bufs, tile
        self.gemm_intrin = I.gemm_intrin(env)
        self.inp_lanes = env.BATCH * env.BLOCK_IN     # values per INP element
        self.wgt_lanes = env.BLOCK_OUT * env.BLOCK_IN
        self.acc_lanes = env.BATCH * env.BLOCK_OUT

    def guard(self, st: ir.Stmt) -> ir.Stmt:
        return ir.IfThenElse(self.tile.index < self.tile.count, st)

    def dma(self, st: ir.Stmt, guarded: bool = True) -> ir.Stmt:
        st = ir.AttrStmt("pragma_dma_copy", True, st)
        return self.guard(st) if guarded else st

    def kern(self, st: ir.Stmt) -> ir.Stmt:
        return self.guard(ir.AttrStmt("pragma_uop_scope", True, st))

    def ev(self, buf: ir.Buffer, i) -> te.BufferView:
        return I.element_view(self.env, buf, i)

    def acc_nest(self, leaf) -> ir.Stmt:
        """``leaf(o, y, x)`` over the accumulator tile."""
        tl = self.tile
        return _nest([("o", tl.oc), ("y", tl.h), ("x", tl.w)], leaf)

    def reset(self) -> ir.Stmt:
        """GEMM reset of the accumulator tile."""
        tl = self.tile
        return self.kern(self.acc_nest(lambda o, y, x: I.gemm(
            self.env, self.gemm_intrin, self.ev(self.b.acc, tl.acc_at(o, y, x)))))

    def reset_once(self) -> ir.Stmt:
        """GEMM reset of the whole accumulator buffer (every tile's entries lie in it), in
        the thread's first tile only: REQUANT leaves zeros behind for the next tile."""
        tl, first = self.tile, ir.eq(self.tile.outer, 0)
        if self.t.wres:
            first = ir.logical_and(first, ir.eq(tl.oc_tile, 0))
        return self.guard(ir.IfThenElse(first, ir.AttrStmt("pragma_uop_scope", True, _nest(
            [("e", self.b.acc.shape[0])], lambda e: I.gemm(
                self.env, self.gemm_intrin, self.ev(self.b.acc, e))))))

    def load_inp(self) -> ir.Stmt:
        """The reduction step's input window into INP, zeros outside the image."""
        s, tl, b = self.s, self.tile, self.b

        def copy(c, y, x):
            ih, iw = tl.ih0 + y, tl.iw0 + x
            cond = ir.logical_and(ih >= 0, ih < s.H, iw >= 0, iw < s.W)
            src = ir.load(b.data, (tl.n, tl.ic0 + c, ih, iw, 0, 0), self.inp_lanes)
            val = ir.select(cond, src, ir.broadcast(ir.const(0, "int8"), self.inp_lanes))
            return _store(b.inp, val, (c * tl.in_rows * tl.in_cols + y * tl.in_cols + x, 0, 0))

        return self.dma(_nest([("c", tl.ic), ("y", tl.in_rows), ("x", tl.in_cols)], copy),
                        False)

    def load_all_wgt(self) -> ir.Stmt:
        """With ``Tiling.wres``: the output-channel tile's weights, the whole reduction."""
        s, tl, b = self.s, self.tile, self.b
        return ir.AttrStmt("pragma_dma_copy", True, _nest(
            [("o", tl.oc), ("c", s.CB), ("x", s.KH * s.KW)],
            lambda o, c, x: _store(b.wgt, ir.load(b.kernel, (tl.oc0 + o, c, x // s.KW,
                                                             x % s.KW, 0, 0), self.wgt_lanes),
                                   ((o * s.CB + c) * s.KH * s.KW + x, 0, 0))))

    def load_wgt(self) -> ir.Stmt:
        """The reduction step's weights."""
        s, tl, b = self.s, self.tile, self.b
        return self.dma(_nest(
            [("o", tl.oc), ("c", tl.ic), ("x", tl.kh * s.KW)],
            lambda o, c, x: _store(b.wgt, ir.load(b.kernel, (tl.oc0 + o, tl.ic0 + c,
                                                             tl.kh0 + x // s.KW, x % s.KW, 0, 0),
                                                  self.wgt_lanes),
                                   ((o * tl.ic + c) * tl.kh * s.KW + x, 0, 0))), False)

    def update(self) -> ir.Stmt:
        """The reduction step's GEMMs over ``(oc, ic, kh, kw, y, x)`` in one uop scope."""
        s, t, tl, b = self.s, self.t, self.tile, self.b
        return self.kern(_nest(
            [("o", tl.oc), ("c", tl.ic), ("kh", tl.kh), ("kw", s.KW), ("y", tl.h), ("x", tl.w)],
            lambda o, c, kh, kw, y, x: I.gemm(
                self.env, self.gemm_intrin, self.ev(b.acc, tl.acc_at(o, y, x)),
                self.ev(b.inp, c * tl.in_rows * tl.in_cols + (y * s.sh + kh) * tl.in_cols
                        + x * s.sw + kw),
                self.ev(b.wgt, (((o * s.CB + tl.ic0 + c) * s.KH + tl.kh0 + kh) if t.wres
                                else ((o * tl.ic + c) * tl.kh + kh)) * s.KW + kw))))

    def load_vector(self, vec: ir.Buffer, dram: ir.Buffer) -> ir.Stmt:
        """One ACC vector (bias or shifts) per output-channel block of the tile."""
        tl = self.tile
        return self.dma(_nest([("o", tl.oc)], lambda o: _store(
            vec, ir.load(dram, (tl.oc0 + o, 0, 0), self.acc_lanes), (o, 0, 0))))

    def alu(self, op: str, **operand) -> ir.Stmt:
        """ALU ``op`` over the accumulator tile; ``vec=`` an ACC vector per channel block as
        the tensor operand, and/or ``imm=`` (both for REQUANT)."""
        tl, b = self.tile, self.b
        vec = operand.pop("vec", None)
        return self.kern(self.acc_nest(lambda o, y, x: I.alu(
            op, self.ev(b.acc, tl.acc_at(o, y, x)),
            **({"src": self.ev(vec, o)} if vec is not None else {}), **operand)))

    def store_out(self) -> ir.Stmt:
        """The int8 truncation of the accumulator tile (exact after the clip) to ``out``."""
        tl, b = self.tile, self.b
        return self.dma(self.acc_nest(lambda o, y, x: _store(
            b.out, ir.cast(ir.load(b.acc, (tl.acc_at(o, y, x), 0, 0), self.acc_lanes),
                           dt.with_lanes("int8", self.acc_lanes)),
            (tl.n, tl.oc0 + o, tl.oh0 + y, tl.ow0 + x, 0, 0))))


def fused_epilogue(*, bias: bool, shifts: bool, mult, mults: bool, zero: int) -> bool:
    """True if the epilogue is one REQUANT pass (bias, an immediate shift, relu, the int8
    clip; ``vta_hw.alu``) instead of a GEMM reset per tile and one ALU pass per step:
    with a bias and no per-channel shifts, multiplier or zero point."""
    return bias and not shifts and not mults and mult is None and not zero


def conv2d_ir(env: Env, s: Conv2dShape, t: Tiling, *, shift: int = 0, relu: bool = False,
              bias: bool = True, shifts: bool = False, mult: "int | None" = None,
              mults: bool = False, post: int = 15, zero: int = 0,
              name: str = "conv2d") -> ir.PrimFunc:
    """The scheduled conv2d as loop IR for ``compiler.codegen.vta`` (module docstring).

    Parameters (DRAM buffers): data ``(NB, CB, H, W, B, BI)`` int8, kernel
    ``(OB, CB, KH, KW, BO, BI)`` int8, [bias ``(OB, B, BO)`` int32], [shift
    ``(OB, B, BO)`` int32: per-output-channel right shifts, with ``shifts``; then
    ``shift`` is ignored], [mult ``(OB, B, BO)`` int32: per-output-channel multipliers,
    with ``mults``], out ``(NB, OB, OH, OW, B, BO)`` int8. ``mult`` (an immediate) or
    ``mults``, with ``post``: after the shift, MUL, SHR ``post - 15``, ADD 2**14, SHR 15
    (``layout.requantize``); then ADD ``zero`` (the output's zero point), MAX ``zero`` (relu)
    or -128, MIN 127.
    """
    b, tl = _buffers(env, s, t), _Tile(s, t)
    st = _Stmts(env, s, t, b, tl)
    fused = fused_epilogue(bias=bias, shifts=shifts, mult=mult, mults=mults, zero=zero)
    body = [st.reset_once() if fused else st.reset()]
    for on, vec, dram in ((bias, b.acc_bias, b.bias), (shifts, b.acc_shift, b.shift),
                          (mults, b.acc_mult, b.mult)):
        if on:
            body.append(st.load_vector(vec, dram))
    # one statement for both loads: each virtual thread's loads stay together, so
    # thread 0's next tile loads while thread 1 computes
    loads = st.load_inp() if t.wres else ir.seq(st.load_inp(), st.load_wgt())
    body.append(_for(tl.red, tl.steps, ir.seq(st.guard(loads), st.update())))
    if fused:
        body.append(st.alu("REQUANT", vec=b.acc_bias, imm=requant_imm(shift, relu)))
    else:
        if bias:
            body.append(st.alu("ADD", vec=b.acc_bias))
        if shifts:
            body.append(st.alu("SHR", vec=b.acc_shift))
        elif shift:
            body.append(st.alu("SHR", imm=shift))
        if mults or mult is not None:
            body.append(st.alu("MUL", vec=b.acc_mult) if mults else st.alu("MUL", imm=mult))
            if post > 15:
                body.append(st.alu("SHR", imm=post - 15))
            body += [st.alu("ADD", imm=1 << 14), st.alu("SHR", imm=15)]
        if zero:
            body.append(st.alu("ADD", imm=zero))
        body.append(st.alu("MAX", imm=zero if relu else -128))
        body.append(st.alu("MIN", imm=127))
    body.append(st.store_out())
    if tl.steps == 1:
        # a single reduction step: keep each virtual thread's whole tile together
        # (one guarded statement), so thread 0's ALU ops and store overlap
        # thread 1's GEMM instead of delaying the next reset
        body = [st.guard(ir.seq(*(_unguard(x) for x in body)))]
    stmt = ir.seq(*body)
    vecs = ([b.acc_bias] if bias else []) + ([b.acc_shift] if shifts else []) + (
        [b.acc_mult] if mults else [])
    for buf in vecs + [b.acc] + ([] if t.wres else [b.wgt]) + [b.inp]:
        stmt = ir.Allocate(buf, stmt)
    stmt = _for(tl.outer, -(-tl.count // t.vt), _for(tl.vt, t.vt, stmt, thread="vthread"))
    if t.wres:
        stmt = _for(tl.oc_tile, tl.n_oc, ir.Allocate(b.wgt, ir.seq(st.load_all_wgt(), stmt)))
    params = ((b.data, b.kernel) + ((b.bias,) if bias else ()) + ((b.shift,) if shifts else ())
              + ((b.mult,) if mults else ()) + (b.out,))
    return inject_virtual_thread(ir.PrimFunc(name, params, stmt))


@dataclasses.dataclass
class Conv2dKernel:
    """A compiled conv2d: the program and how to feed it.

    ``pack_data(x NCHW int8)``, ``pack_weight(w OIHW int8)``, ``pack_bias(b (O,) int32)``
    give the buffers' contents; ``params(w, b)`` the param buffers (kernel, bias, and
    the per-channel shifts when ``shift`` is a tuple); ``inputs(x, w, b)`` a dict for
    ``Program.dram_image``; ``unpack(out)`` turns the packed output into NCHW int8;
    ``reference(x, w, b)`` is the numpy result the program must match bit for bit.
    """
    program: Program
    env: Env
    shape: Conv2dShape
    tiling: Tiling
    N: int
    C: int
    O: int
    shift: int | tuple[int, ...]   # a tuple: one right shift per output channel
    relu: bool
    bias: bool
    stats: vta_codegen.BuildStats
    compile_s: float
    mult: "int | tuple[int, ...] | None" = None   # ``layout.requantize``
    post: int = 15
    zero: int = 0                                 # the output's zero point

    def pack_data(self, x: np.ndarray) -> np.ndarray:
        return pack_nchw(np.asarray(x, np.int8), self.env.BATCH, self.env.BLOCK_IN)

    def pack_weight(self, w: np.ndarray) -> np.ndarray:
        return pack_oihw(np.asarray(w, np.int8), self.env.BLOCK_OUT, self.env.BLOCK_IN)

    def pack_bias(self, b: np.ndarray) -> np.ndarray:
        return pack_bias(np.asarray(b, np.int32), self.env.BATCH, self.env.BLOCK_OUT)

    @property
    def per_channel(self) -> bool:
        return isinstance(self.shift, tuple)

    def params(self, w, b=None) -> dict[str, np.ndarray]:
        d = {"kernel": self.pack_weight(w)}
        if self.bias:
            d["bias"] = self.pack_bias(b if b is not None else np.zeros(self.O, np.int32))
        if self.per_channel:
            d["shift"] = self.pack_bias(np.asarray(self.shift, np.int32))
        if isinstance(self.mult, tuple):
            d["mult"] = self.pack_bias(np.asarray(self.mult, np.int32))
        return d

    def inputs(self, x, w, b=None) -> dict[str, np.ndarray]:
        return {"data": self.pack_data(x), **self.params(w, b)}

    def unpack(self, out: np.ndarray) -> np.ndarray:
        return unpack_nchw(out, self.N, self.O)

    def reference(self, x, w, b=None) -> np.ndarray:
        s = self.shape
        return conv2d_reference(x, w, b if self.bias else None, (s.sh, s.sw), (s.ph, s.pw),
                                self.shift, self.relu, self.mult, self.post, self.zero)


def _pair(v, what: str) -> tuple[int, int]:
    if isinstance(v, int):
        return v, v
    v = tuple(v)
    if len(v) != 2 or not all(isinstance(x, int) for x in v):
        raise ValueError(f"{what} must be an int or a pair of ints, not {v!r}")
    return v


def conv2d_program(cfg: VTAConfig, data_shape, kernel_shape, strides=1, padding=0, *,
                   shift=0, relu: bool = False, bias: bool = True, mult=None, post: int = 15,
                   zero: int = 0, vthreads: int = 2, tiling: Tiling | None = None,
                   dram: DramTiming | None = None,
                   measure: Callable[[Program], float] | None = None,
                   tune_top: int = 8) -> Conv2dKernel:
    """Compile a quantized conv2d for the accelerator.

    Args:
        cfg: the accelerator config.
        data_shape: (N, C, H, W) of the NCHW int8 input (any N, C; padded to blocks).
        kernel_shape: (O, C, KH, KW) of the OIHW int8 weights.
        strides, padding: ints or (h, w) pairs; padding is symmetric, at most 15.
        shift: arithmetic right shift of the int32 accumulators (0..31), or a sequence
            of O such shifts, one per output channel (per-channel weight scales: the
            program gets a "shift" param buffer, packed as the bias).
        relu: clamp at 0 before the int8 clip.
        mult, post: a multiplier in [1, 32767] (the ALU's 16-bit immediate) or O of them
            (an ACC vector like the shifts, param buffer "mult"), applied after the shift
            with a rounding right shift by ``post`` (15..46): ``layout.requantize``. None:
            shifts only (power-of-two scales).
        zero: the output's zero point in [-128, 127], added after the requantization
            (ALU ADD immediate); relu then clamps at it (real 0).
        bias: add an int32 per-output-channel bias (a DRAM buffer "bias").
        vthreads: virtual threads for latency hiding (1 disables; 2 is the default).
        tiling: a fixed ``Tiling`` instead of ``tiling.search``.
        dram: the DRAM timing the tile search ranks against.
        measure: autotuning (as TVM's measure function): given a Program, its cost
            (e.g. cycles from ``sim.cycle.run``); the best of the ``tune_top``
            best-estimated tilings is kept. None: the best estimate, no measuring.

    Returns:
        Conv2dKernel (program with buffers "data", "kernel", ["bias"], ["shift"], "out").

    Raises:
        ValueError: bad shapes/arguments; TilingError, CodegenError as named.
    """
    t0 = time.perf_counter()
    env = Env(cfg)
    N, C, H, W = data_shape
    O, C2, KH, KW = kernel_shape
    if C2 != C:
        raise ValueError(f"kernel has {C2} input channels, data has {C}; they must match")
    per_channel = not isinstance(shift, (int, np.integer))
    if per_channel:
        shift = tuple(int(v) for v in np.asarray(shift).reshape(-1))
        if len(shift) != O:
            raise ValueError(f"per-channel shift has {len(shift)} entries, the kernel {O} output "
                             "channels; give one shift per output channel")
    for v in (shift if per_channel else (shift,)):
        if not 0 <= v <= 31:
            raise ValueError(f"shift must be in [0, 31], not {v}")
    mults = mult is not None and not isinstance(mult, (int, np.integer))
    if mults:
        mult = tuple(int(v) for v in np.asarray(mult).reshape(-1))
        if len(mult) != O:
            raise ValueError(f"per-channel mult has {len(mult)} entries, the kernel {O} output "
                             "channels; give one multiplier per output channel")
    for v in (mult if mults else () if mult is None else (mult,)):
        if not 1 <= v <= 32767:
            raise ValueError(f"mult must be in [1, 32767] (a 16-bit ALU immediate), not {v}")
    if mult is not None and not 15 <= post <= 46:
        raise ValueError(f"post must be in [15, 46] (two right shifts of at most 31), not {post}")
    if not -128 <= zero <= 127:
        raise ValueError(f"zero (the output's zero point) must be in [-128, 127], not {zero}")
    (sh, sw), (ph, pw) = _pair(strides, "strides"), _pair(padding, "padding")
    s = Conv2dShape(-(-N // env.BATCH), -(-C // env.BLOCK_IN), H, W, -(-O // env.BLOCK_OUT),
                    KH, KW, sh, sw, ph, pw)
    kinds = {"data": "input", "kernel": "param", "bias": "param", "shift": "param",
             "mult": "param", "out": "output"}
    vectors = int(bias) + int(per_channel) + int(mults)  # ACC vectors per channel block
    tilings = [tiling] if tiling else candidates(s, cfg, vectors, vthreads, dram,
                                                 tune_top if measure else 1)
    best = None
    for t in tilings:
        func = conv2d_ir(env, s, t, shift=0 if per_channel else shift, relu=relu, bias=bias,
                         shifts=per_channel, mult=None if mults else mult, mults=mults, post=post,
                         zero=int(zero))
        stats = vta_codegen.BuildStats()
        prog = vta_codegen.build(func, cfg, kinds, stats=stats)
        cost = measure(prog) if measure and len(tilings) > 1 else 0.0
        if best is None or cost < best[0]:
            best = (cost, t, prog, stats)
    _, t, prog, stats = best
    return Conv2dKernel(prog, env, s, t, N, C, O, shift, relu, bias, stats,
                        time.perf_counter() - t0, mult, post, int(zero))


def dense_program(cfg: VTAConfig, data_shape, weight_shape, *, shift=0,
                  relu: bool = False, bias: bool = True, vthreads: int = 2, mult=None,
                  post: int = 15, zero: int = 0) -> "DenseKernel":
    """Compile a quantized dense layer: ``x`` (N, C) int8 times ``w`` (O, C) int8 -> (N, O).

    Packed layouts: data ``(N/B, C/BI, 1, 1, B, BI)``, weights ``(O/BO, C/BI, 1, 1, BO, BI)``
    (the NCHWnc / OIHWoi layouts with 1x1 images), output ``(N/B, O/BO, 1, 1, B, BO)``.
    """
    N, C = data_shape
    O, C2 = weight_shape
    k = conv2d_program(cfg, (N, C, 1, 1), (O, C2, 1, 1), shift=shift, relu=relu, bias=bias,
                       vthreads=vthreads, mult=mult, post=post, zero=zero)
    return DenseKernel(k)


@dataclasses.dataclass
class DenseKernel:
    """A compiled dense layer; the helpers take 2-D arrays (see ``Conv2dKernel``)."""
    conv: Conv2dKernel

    @property
    def program(self) -> Program:
        return self.conv.program

    def inputs(self, x, w, b=None) -> dict[str, np.ndarray]:
        return self.conv.inputs(np.asarray(x)[:, :, None, None], np.asarray(w)[:, :, None, None], b)

    def unpack(self, out: np.ndarray) -> np.ndarray:
        return self.conv.unpack(out)[:, :, 0, 0]

    def reference(self, x, w, b=None) -> np.ndarray:
        return self.conv.reference(np.asarray(x)[:, :, None, None],
                                   np.asarray(w)[:, :, None, None], b)[:, :, 0, 0]
