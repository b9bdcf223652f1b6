"""Residual add on the accelerator: ``add_program``, bit-exact with ``layout.add_reference``.

The op (the quantized graph's ADD, ``compiler.quant.qgraph``) on two int8
tensors of one shape::

    s = (a << la) + (b << lb)                  int32, wrapping
    s = (s + 2**(shift-1)) >> shift            if shift > 0 (round half up)
    y = clip(relu?(s), -128, 127)              int8

The ISA loads int8 only into INP and has no int8 -> ACC load, so the GEMM
widens: both operands are packed activations (NCHWnc, the layout a conv's
program writes and reads), an elementwise op treats them as flat streams of
INP elements. Per tile of ``T`` elements, each virtual thread:

1. LOADs ``T`` elements of ``a`` and of ``b`` into its two INP tiles;
2. resets its ACC tile (GEMM reset) and GEMMs the operand with the larger
   shift (``hi``, shift ``h``; the other is ``lo``, shift ``l``, ``d = h - l``)
   against the identity block times ``2**min(d, 6)`` (a WGT element; int8 holds
   2**6), ALU SHR by ``-(d - 6)`` when ``d > 6`` (a negative SHR shifts left),
   then GEMMs ``lo`` against the identity: ``acc = (hi << d) + lo``;
3. ALU SHR by ``-l`` when ``l > 0``: ``acc = (hi << h) + (lo << l)`` modulo 2**32,
   which is the int32 wrapping of the oracle;
4. ALU ADD the rounding constant (one ACC element, built once per program by
   GEMM reset, ADD 1, SHR ``-(shift-1)``: exact for every shift up to 31,
   where an immediate holds only 16 bits), SHR ``shift``, MAX 0 (relu) or
   -128, MIN 127 (each clip only when the value range of the inputs can reach
   it); STORE the tile (OUT holds the int8 truncation, exact after the clip).

The two identity blocks load once into WGT; with two virtual threads one
thread's loads and store overlap the other's GEMM/ALU work (the code
generator's dependency tokens order them). On the default preset with a
64-bit, 8 B/cycle DRAM a tile costs about 6 DMA beats and 7 GEMM/ALU cycles
per element, overlapped: about 7 cycles per 16-channel element.

``add_program(cfg, shape, la=, lb=, shift=, relu=)`` returns an ``AddKernel``:
the ``Program`` (DRAM buffers "lhs", "rhs": inputs, "weight": the baked
identity blocks, "out": output, each activation ``(N/B, C/BI, H, W, B, BI)``
int8) plus pack/unpack helpers.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Callable

import numpy as np

from compiler.codegen.vta import codegen as vta_codegen
from compiler.tir import dtype as dt
from compiler.tir import ir
from compiler.tir.passes.vthread import inject_virtual_thread
from vta_hw.config import LOOP_ITER_BITS, VTAConfig
from vta_hw.program import Program
from vta_hw.timing import DramTiming

from . import intrin as I
from .conv2d import _for, _nest, _store
from .environment import ACC_SCOPE, INP_SCOPE, WGT_SCOPE, Env
from .layout import add_reference, pack_nchw, unpack_nchw
from .tiling import TilingError, _dma_cycles

#: the largest power of two an int8 weight holds
_MAX_WGT_LOG2 = 6


def _check_shifts(la: int, lb: int, shift: int) -> None:
    for name, v in (("la", la), ("lb", lb), ("shift", shift)):
        if not isinstance(v, (int, np.integer)) or not 0 <= v <= 31:
            raise ValueError(f"add {name} must be an int in [0, 31] (an int32 shift), not {v!r}")


def clip_ops(la: int, lb: int, shift: int, relu: bool) -> list[tuple[str, int]]:
    """The clip ALU ops the add needs: ``[("MAX", 0 | -128)?, ("MIN", 127)?]``, dropping a
    bound no int8 inputs can cross (without int32 wrap-around)."""
    hi = (127 << la) + (127 << lb)
    lo = -(128 << la) - (128 << lb)
    rnd = (1 << (shift - 1)) if shift else 0
    wraps = hi + rnd >= 1 << 31 or lo < -(1 << 31)
    out = []
    if relu or wraps or (lo + rnd) >> shift < -128:
        out.append(("MAX", 0 if relu else -128))
    if wraps or (hi + rnd) >> shift > 127:
        out.append(("MIN", 127))
    return out


def add_ir(env: Env, elems: int, shape, tile: int, vt: int, *, la: int, lb: int, shift: int,
           relu: bool, name: str = "add") -> ir.PrimFunc:
    """The scheduled add as loop IR for ``compiler.codegen.vta`` (module docstring).

    Args:
        elems: INP elements per operand (the packed tensor's size / (BATCH x BLOCK_IN)).
        shape: the packed DRAM shape of "lhs", "rhs" and "out".
        tile: elements per tile per virtual thread; vt: virtual threads.
    """
    B, BI, BO = env.BATCH, env.BLOCK_IN, env.BLOCK_OUT
    EI, EW, EA = B * BI, BO * BI, B * BO
    lhs = ir.Buffer("lhs", "int8", tuple(shape))
    rhs = ir.Buffer("rhs", "int8", tuple(shape))
    weight = ir.Buffer("weight", "int8", (2, BO, BI))
    out = ir.Buffer("out", "int8", tuple(shape))
    inp_a = ir.Buffer("inp_a", "int8", (tile, B, BI), scope=INP_SCOPE)
    inp_b = ir.Buffer("inp_b", "int8", (tile, B, BI), scope=INP_SCOPE)
    acc = ir.Buffer("acc", "int32", (tile, B, BO), scope=ACC_SCOPE)
    wgt = ir.Buffer("wgt", "int8", (2, BO, BI), scope=WGT_SCOPE)
    rnd = ir.Buffer("acc_round", "int32", (1, B, BO), scope=ACC_SCOPE)
    gemm = I.gemm_intrin(env)

    def ev(buf, i):
        return I.element_view(env, buf, i)

    n_tiles = -(-elems // tile)
    to, v = ir.var("tile.outer"), ir.var("vt")
    t = to * vt + v
    e0 = t * tile
    TT = ir.min_(tile, elems - e0)
    hi_buf, lo_buf = (inp_a, inp_b) if la >= lb else (inp_b, inp_a)
    d, low = abs(la - lb), min(la, lb)

    def kern(st):
        return ir.AttrStmt("pragma_uop_scope", True, st)

    def each(fn):  # one kernel over the tile's elements
        return kern(_nest([("x", TT)], fn))

    def alu(op, **kw):
        return each(lambda x: I.alu(op, ev(acc, x), **kw))

    def load(src, dst):
        return _nest([("x", TT)], lambda x: _store(dst, ir.load(src, ((e0 + x) * EI,), EI),
                                                     (x, 0, 0)))

    body = [ir.AttrStmt("pragma_dma_copy", True, ir.seq(load(lhs, inp_a), load(rhs, inp_b))),
            each(lambda x: I.gemm(env, gemm, ev(acc, x))),
            each(lambda x: I.gemm(env, gemm, ev(acc, x), ev(hi_buf, x), ev(wgt, 0)))]
    if d > _MAX_WGT_LOG2:
        body.append(alu("SHR", imm=-(d - _MAX_WGT_LOG2)))
    body.append(each(lambda x: I.gemm(env, gemm, ev(acc, x), ev(lo_buf, x), ev(wgt, 1))))
    if low:
        body.append(alu("SHR", imm=-low))
    if shift:
        body.append(alu("ADD", src=ev(rnd, 0)))
        body.append(alu("SHR", imm=shift))
    for op, imm in clip_ops(la, lb, shift, relu):
        body.append(alu(op, imm=imm))
    body.append(ir.AttrStmt("pragma_dma_copy", True, _nest([("x", TT)], lambda x: _store(
        out, ir.cast(ir.load(acc, (x, 0, 0), EA), dt.with_lanes("int8", EA)), ((e0 + x) * EA,)))))
    # one guarded statement per tile: each virtual thread's whole tile stays together,
    # so one thread's loads and store overlap the other's GEMM/ALU work
    stmt = ir.IfThenElse(t < n_tiles, ir.seq(*body))
    for b in (acc, inp_b, inp_a):
        stmt = ir.Allocate(b, stmt)
    stmt = _for(to, -(-n_tiles // vt), _for(v, vt, stmt, thread="vthread"))
    setup = [ir.AttrStmt("pragma_dma_copy", True, _nest(
        [("w", 2)], lambda w: _store(wgt, ir.load(weight, (w * EW,), EW), (w, 0, 0))))]
    if shift:  # acc_round = 2**(shift-1) in every lane
        setup += [kern(I.gemm(env, gemm, ev(rnd, 0))), kern(I.alu("ADD", ev(rnd, 0), imm=1))]
        if shift > 1:
            setup.append(kern(I.alu("SHR", ev(rnd, 0), imm=-(shift - 1))))
    stmt = ir.Allocate(wgt, ir.seq(*setup, stmt))
    if shift:
        stmt = ir.Allocate(rnd, stmt)
    return inject_virtual_thread(ir.PrimFunc(name, (lhs, rhs, weight, out), stmt))


def identity_weights(env: Env, la: int, lb: int) -> np.ndarray:
    """The "weight" buffer: ``(2, BLOCK_OUT, BLOCK_IN)`` int8, the identity times
    ``2**min(|la - lb|, 6)`` (for the operand with the larger shift), then the identity."""
    eye = np.eye(env.BLOCK_OUT, env.BLOCK_IN, dtype=np.int8)
    return np.stack([eye * np.int8(1 << min(abs(la - lb), _MAX_WGT_LOG2)), eye])


def estimate(elems: int, tile: int, vt: int, cfg: VTAConfig, n_alu: int,
             dram: DramTiming | None = None) -> float:
    """Estimated cycles of an add tiling (a ranking, not a prediction): per tile, three
    DMAs of ``tile`` elements and ``3 + n_alu`` GEMM/ALU passes over them, plus a fixed
    cost per instruction; two threads overlap DMA with compute."""
    dram = dram or DramTiming()
    n = -(-elems // tile)
    dma = 3 * _dma_cycles(1, tile * cfg.inp_elem_bytes, cfg, dram)
    comp = tile * (3 + n_alu) + (3 + n_alu) * 8
    if vt == 1:
        return n * (dma + comp)
    return n * max(dma, comp) + dma + comp


def max_tile(cfg: VTAConfig, vt: int, shift: int) -> int:
    """The most elements a tile can hold per virtual thread: two INP tiles and one ACC
    tile (besides the rounding constant) each, within the loop-iteration field."""
    env = Env(cfg)
    inp = env.depth(INP_SCOPE) // (2 * vt)
    acc = (env.depth(ACC_SCOPE) - (1 if shift else 0)) // vt
    return min(inp, acc, (1 << LOOP_ITER_BITS) - 1)


def candidates(elems: int, cfg: VTAConfig, vt: int, n_alu: int, shift: int,
               dram: DramTiming | None = None, top: int = 1) -> list[int]:
    """The ``top`` best-ranked tile sizes (elements per thread), best first.

    Raises:
        TilingError: not even one element fits (names the buffers).
    """
    cap = max_tile(cfg, vt, shift)
    if cap < 1:
        raise TilingError(f"no add tile fits {cfg.name} with {vt} virtual threads: a tile needs "
                          f"2 INP and 1 ACC entries per thread; INP holds {cfg.inp_depth}, "
                          f"ACC {cfg.acc_depth}")
    sizes = {min(cap, elems)} | {min(cap, -(-elems // k)) for k in range(1, 65)}
    sizes |= {1 << k for k in range(cap.bit_length()) if 1 << k <= min(cap, elems)}
    ranked = sorted(sizes, key=lambda s: (estimate(elems, s, vt, cfg, n_alu, dram), -s))
    return ranked[:top]


@dataclasses.dataclass
class AddKernel:
    """A compiled add: the program and how to feed it.

    ``inputs(a, b)`` (NCHW int8) gives the DRAM buffers for ``Program.dram_image``;
    ``unpack(out)`` the NCHW int8 result; ``reference(a, b)`` what it must equal.
    """
    program: Program
    env: Env
    shape: tuple[int, int, int, int]
    la: int
    lb: int
    shift: int
    relu: bool
    tile: int
    vt: int
    stats: vta_codegen.BuildStats
    compile_s: float

    @property
    def tiling(self) -> str:
        return f"AddTiling(tile={self.tile}, vt={self.vt})"

    def pack(self, x: np.ndarray) -> np.ndarray:
        return pack_nchw(np.asarray(x, np.int8), self.env.BATCH, self.env.BLOCK_IN)

    def inputs(self, a, b) -> dict[str, np.ndarray]:
        return {"lhs": self.pack(a), "rhs": self.pack(b)}

    def unpack(self, out: np.ndarray) -> np.ndarray:
        return unpack_nchw(out, self.shape[0], self.shape[1])

    def reference(self, a, b) -> np.ndarray:
        return add_reference(a, b, self.la, self.lb, self.shift, self.relu)


def add_program(cfg: VTAConfig, shape, *, la: int = 0, lb: int = 0, shift: int = 0,
                relu: bool = False, vthreads: int = 2, tile: int | None = None,
                dram: DramTiming | None = None,
                measure: Callable[[Program], float] | None = None,
                tune_top: int = 4) -> AddKernel:
    """Compile a quantized residual add for the accelerator (module docstring).

    Args:
        cfg: the accelerator config.
        shape: (N, C, H, W) of both NCHW int8 operands and the output (any N, C;
            padded to blocks in the packed layout).
        la, lb: left shifts of the operands to a common exponent (0..31).
        shift: arithmetic right shift, rounding half up (0..31).
        relu: clamp at 0 before the int8 clip.
        vthreads: virtual threads for latency hiding (1 disables; 2 is the default).
        tile: elements per tile per thread instead of the estimate's choice.
        dram: the DRAM timing the tile choice ranks against.
        measure: as ``conv2d_program``: the cheapest of the ``tune_top`` best-estimated
            tile sizes by this cost (e.g. cycles from ``sim.cycle.run``).

    Returns:
        AddKernel (program buffers "lhs", "rhs", "weight" (baked), "out").

    Raises:
        ValueError: a shift outside [0, 31], a shape that is not 4 positive ints, a
            tile larger than the buffers hold; TilingError, CodegenError as named.
    """
    t0 = time.perf_counter()
    _check_shifts(la, lb, shift)
    shape = tuple(shape)
    if len(shape) != 4 or not all(isinstance(s, (int, np.integer)) and s > 0 for s in shape):
        raise ValueError(f"add shape must be 4 positive ints (N, C, H, W), not {shape!r}")
    env = Env(cfg)
    N, C, H, W = (int(s) for s in shape)
    packed = (-(-N // env.BATCH), -(-C // env.BLOCK_IN), H, W, env.BATCH, env.BLOCK_IN)
    elems = packed[0] * packed[1] * H * W
    n_alu = sum(1 for _ in clip_ops(la, lb, shift, relu)) + 2 * bool(shift) \
        + bool(abs(la - lb) > _MAX_WGT_LOG2) + bool(min(la, lb))
    vt = vthreads if vthreads > 1 and max_tile(cfg, vthreads, shift) >= 1 else 1
    if tile is not None:
        cap = max_tile(cfg, vt, shift)
        if not 1 <= tile <= cap:
            raise ValueError(f"add tile must be in [1, {cap}] elements on {cfg.name} with {vt} "
                             f"virtual threads, not {tile}")
        tiles = [tile]
    else:
        tiles = candidates(elems, cfg, vt, n_alu, shift, dram, tune_top if measure else 1)
    kinds = {"lhs": "input", "rhs": "input", "weight": "param", "out": "output"}
    data = {"weight": identity_weights(env, la, lb)}
    best = None
    for tl in tiles:
        func = add_ir(env, elems, packed, tl, vt, la=la, lb=lb, shift=shift, relu=relu)
        stats = vta_codegen.BuildStats()
        prog = vta_codegen.build(func, cfg, kinds, data, stats=stats)
        cost = measure(prog) if measure and len(tiles) > 1 else 0.0
        if best is None or cost < best[0]:
            best = (cost, tl, prog, stats)
    _, tl, prog, stats = best
    return AddKernel(prog, env, (N, C, H, W), int(la), int(lb), int(shift), bool(relu), tl, vt,
                     stats, time.perf_counter() - t0)
