"""A hand-written int8 GEMM program: ``C = requantize(A @ B^T)``, tiled for any preset.

Shapes and dtypes (logical): ``A`` (M, K) int8, ``B`` (N, K) int8, ``C`` (M, N)
int8 with ``C = clip((A @ B^T) >> shift, -127, 127)`` computed in int32 with
wraparound, as the accelerator does. In DRAM they are packed in blocks:
``A`` as (M/BATCH, K/BLOCK, BATCH, BLOCK), ``B`` as (N/BLOCK, K/BLOCK, BLOCK, BLOCK),
``C`` as (M/BATCH, N/BLOCK, BATCH, BLOCK) (VTA's NCHWnc-style packing).

The stream walks output tiles of ``mb x nb`` blocks (whole K per tile): the
load module loads the A and B tiles, compute resets the accumulators, runs
one GEMM over the tile, requantizes with ALU SHR/MIN/MAX, and the store
module writes the tile back. Dependency tokens serialize the tiles
(load -> compute -> store, with store -> compute and compute -> load
releasing the buffers), so the example stays easy to read in ``vta disasm``.
"""
from __future__ import annotations

import numpy as np

from vta_hw import isa
from vta_hw.config import VTAConfig
from vta_hw.errors import ArgumentError
from vta_hw.program import DramLayout, Program


def reference(a: np.ndarray, b: np.ndarray, shift: int) -> np.ndarray:
    """``clip((a @ b.T) >> shift, -127, 127)`` in int32 with wraparound; (M, N) int8."""
    acc = (a.astype(np.int64) @ b.astype(np.int64).T).astype(np.int32)  # wraps like int32
    return np.clip(acc >> shift, -127, 127).astype(np.int8)


def pack(x: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """(R, C) -> (R/rows, C/cols, rows, cols), the blocked DRAM layout."""
    r, c = x.shape
    return x.reshape(r // rows, rows, c // cols, cols).transpose(0, 2, 1, 3).copy()


def unpack(x: np.ndarray) -> np.ndarray:
    """Inverse of ``pack``."""
    rb, cb, rows, cols = x.shape
    return x.transpose(0, 2, 1, 3).reshape(rb * rows, cb * cols)


def _largest_divisor(n: int, ok) -> int:
    return max((d for d in range(1, n + 1) if n % d == 0 and ok(d)), default=0)


def gemm_program(cfg: VTAConfig, m: int = 64, n: int = 64, k: int = 64, shift: int = 4,
                 seed: int = 0) -> tuple[Program, np.ndarray]:
    """Build the GEMM program with random int8 inputs stored in it.

    Returns:
        ``(program, expected)``: ``expected`` is the (M, N) int8 numpy result.

    Raises:
        ArgumentError: M is not a multiple of BATCH, N or K not of BLOCK, or one
            row of K blocks does not fit the INP/WGT buffers of ``cfg``.
    """
    for name, dim, unit, what in (("m", m, cfg.BATCH, "BATCH"), ("n", n, cfg.BLOCK, "BLOCK"),
                                  ("k", k, cfg.BLOCK, "BLOCK")):
        if dim <= 0 or dim % unit:
            raise ArgumentError(f"{name}={dim} must be a positive multiple of {what}={unit}")
    if not 0 <= shift <= 31:
        raise ArgumentError(f"shift must be in [0, 31], not {shift}")
    mblk, nblk, kb = m // cfg.BATCH, n // cfg.BLOCK, k // cfg.BLOCK
    nb = _largest_divisor(nblk, lambda d: d * kb <= cfg.wgt_depth)
    mb = _largest_divisor(mblk, lambda d: d * kb <= cfg.inp_depth and d * nb <= cfg.acc_depth)
    if not nb or not mb or kb > cfg.uop_depth:
        raise ArgumentError(f"k={k} is too large for preset {cfg.name}: one row of {kb} blocks "
                         f"must fit the INP ({cfg.inp_depth}), WGT ({cfg.wgt_depth}) and UOP "
                         f"({cfg.uop_depth}) buffers; use a smaller k")

    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    b = rng.integers(-128, 128, (n, k), dtype=np.int8)
    lay = DramLayout(cfg)
    a_buf = lay.alloc("A", (mblk, kb, cfg.BATCH, cfg.BLOCK), "int8", "input",
                      pack(a, cfg.BATCH, cfg.BLOCK))
    b_buf = lay.alloc("B", (nblk, kb, cfg.BLOCK, cfg.BLOCK), "int8", "param",
                      pack(b, cfg.BLOCK, cfg.BLOCK))
    c_buf = lay.alloc("C", (mblk, nblk, cfg.BATCH, cfg.BLOCK), "int8", "output")
    uops = [isa.Uop(dst=0, src=kk, wgt=kk) for kk in range(kb)]
    uop_base = lay.alloc_uops(len(uops))

    a0, b0, c0 = lay.elem(a_buf, "inp"), lay.elem(b_buf, "wgt"), lay.elem(c_buf, "out")
    tiles = [(mi, ni) for mi in range(0, mblk, mb) for ni in range(0, nblk, nb)]
    def step(extent: int, factor: int) -> int:
        """A loop factor; 0 for a loop of one iteration (the factor may not fit its field)."""
        return factor if extent > 1 else 0

    loops = dict(iter_out=mb, iter_in=nb, dst_factor_out=step(mb, nb), dst_factor_in=step(nb, 1))
    insns: list = [isa.Load(mem=isa.MemId.UOP, sram_base=0, dram_base=uop_base,
                            y_size=1, x_size=kb, x_stride=kb)]
    for t, (mi, ni) in enumerate(tiles):
        first, last = t == 0, t == len(tiles) - 1
        insns += [
            isa.Load(mem=isa.MemId.INP, pop_next=not first, sram_base=0,
                     dram_base=a0 + mi * kb, y_size=mb, x_size=kb, x_stride=kb),
            isa.Load(mem=isa.MemId.WGT, push_next=True, sram_base=0,
                     dram_base=b0 + ni * kb, y_size=nb, x_size=kb, x_stride=kb),
            isa.Gemm(pop_prev=True, pop_next=not first, reset=True, uop_bgn=0, uop_end=1,
                     **loops),
            isa.Gemm(uop_bgn=0, uop_end=kb, src_factor_out=step(mb, kb),
                     wgt_factor_in=step(nb, kb), **loops),
            isa.Alu(alu_op=isa.AluOp.SHR, use_imm=True, imm=shift, uop_bgn=0, uop_end=1, **loops),
            isa.Alu(alu_op=isa.AluOp.MIN, use_imm=True, imm=127, uop_bgn=0, uop_end=1, **loops),
            isa.Alu(alu_op=isa.AluOp.MAX, use_imm=True, imm=-127, uop_bgn=0, uop_end=1,
                    push_prev=not last, push_next=True, **loops),
            isa.Store(pop_prev=True, push_prev=True, sram_base=0,
                      dram_base=c0 + mi * nblk + ni, y_size=mb, x_size=nb, x_stride=nblk),
        ]
    insns.append(isa.Finish(pop_next=True))
    return lay.finish(insns, uops), reference(a, b, shift)
