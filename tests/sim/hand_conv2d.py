"""A test fixture: a convolution's instruction stream written by hand (before the
compiler emitted programs), kept because its schedule differs from the
compiler's (``compiler.topi.vta.conv2d_program``) and so gives the cycle model
and the RTL another mix of overlaps.

``hand_conv2d_program(cfg, ...)`` is a 2-D convolution (stride 1, square kernel,
zero padding) as the accelerator runs it, with int8 data and requantization
``clip(acc >> shift, -127, 127)``. Default shapes: ResNet-18's 3x3 conv of
stage 2 (56x56, 64 -> 64 channels, pad 1).

DRAM layouts (blocked NCHWnc, batch 1 as BATCH rows):

- ``inp``: ``(C_in/BLOCK, H, W, BATCH, BLOCK)`` int8;
- ``wgt``: ``(C_out/BLOCK, C_in/BLOCK, K, K, BLOCK, BLOCK)`` int8 (``[oc][ic]`` per block);
- ``out``: ``(C_out/BLOCK, H, W, BATCH, BLOCK)`` int8.

Schedule (VTA style): all weights and uops are loaded once; the output is
tiled in bands of ``rows`` output rows; two virtual threads alternate bands,
each in its own half of the INP and ACC buffers, so the load of band ``b + 1``
and the store of band ``b - 1`` overlap the GEMMs of band ``b``. Per band: one
padded LOAD INP per input-channel block; a reset GEMM; one GEMM per
output-channel block (``iter_out`` = rows, ``iter_in`` = W, one uop per
(input block, ky, kx)); ALU SHR, MIN, MAX; one STORE per output-channel block.
Tokens: load -> compute (band's inputs loaded), compute -> load (INP half
free again), compute -> store (band's outputs ready), store -> compute (ACC/OUT
half free again), and FINISH waits for the last store.
"""
from __future__ import annotations

import numpy as np

from vta_hw.config import VTAConfig
from vta_hw.isa import Alu, AluOp, Finish, Gemm, Load, MemId, Store, Uop
from vta_hw.program import DramLayout, Program


def hand_conv2d_reference(x: np.ndarray, w: np.ndarray, pad: int, shift: int) -> np.ndarray:
    """``clip(conv(x, w) >> shift, -127, 127)``: x (C_in, H, W) int8, w (C_out, C_in, K, K)
    int8 -> (C_out, H', W') int8, accumulated in int32 (stride 1)."""
    cin, h, wd = x.shape
    cout, _, k, _ = w.shape
    xp = np.pad(x.astype(np.int64), ((0, 0), (pad, pad), (pad, pad)))
    ho, wo = h + 2 * pad - k + 1, wd + 2 * pad - k + 1
    acc = np.zeros((cout, ho, wo), np.int64)
    for ky in range(k):
        for kx in range(k):
            acc += np.einsum("oi,ihw->ohw", w[:, :, ky, kx].astype(np.int64),
                             xp[:, ky:ky + ho, kx:kx + wo])
    acc = acc.astype(np.int32)  # wraps as the accumulators do
    return np.clip(acc >> shift, -127, 127).astype(np.int8)


def hand_conv2d_program(cfg: VTAConfig, h: int = 56, w: int = 56, cin: int = 64, cout: int = 64,
                   k: int = 3, pad: int = 1, rows: int = 2, shift: int = 8,
                   seed: int = 0) -> tuple[Program, np.ndarray]:
    """The convolution's program, with random int8 input and weights stored in it.

    Args:
        cfg: the config (BATCH must be 1).
        h, w: input height and width; cin, cout: channels (multiples of BLOCK).
        k: kernel size; pad: zero padding (at most 15, the pad field).
        rows: output rows per band (the output height must be a multiple).
        shift: requantization shift.

    Returns:
        ``(program, expected)``: expected output ``(C_out/BLOCK, H', W', BATCH, BLOCK)`` int8.

    Raises:
        ValueError: shapes that do not tile, or a band too large for the buffers.
    """
    B = cfg.BLOCK
    if cfg.BATCH != 1:
        raise ValueError(f"hand_conv2d_program needs BATCH=1, not {cfg.BATCH}")
    if cin % B or cout % B:
        raise ValueError(f"cin={cin} and cout={cout} must be multiples of BLOCK={B}")
    ho, wo = h + 2 * pad - k + 1, w + 2 * pad - k + 1
    if ho <= 0 or wo <= 0 or ho % rows:
        raise ValueError(f"output height {ho} must be a positive multiple of rows={rows}")
    if not 0 <= pad <= 15:
        raise ValueError(f"pad must be in [0, 15] (a 4-bit field), not {pad}")
    icb, ocb = cin // B, cout // B
    bands = ho // rows
    in_rows, in_cols = rows + k - 1, w + 2 * pad
    inp_half = icb * in_rows * in_cols
    acc_half = ocb * rows * wo
    n_wgt = ocb * icb * k * k
    if 2 * inp_half > cfg.inp_depth or 2 * acc_half > cfg.acc_depth or n_wgt > cfg.wgt_depth:
        raise ValueError(f"a band of {rows} rows needs INP 2x{inp_half}, ACC 2x{acc_half}, WGT "
                         f"{n_wgt} entries; preset {cfg.name} has {cfg.inp_depth}, "
                         f"{cfg.acc_depth}, {cfg.wgt_depth}; use fewer rows or channels")

    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (cin, h, w), dtype=np.int8)
    wt = rng.integers(-128, 128, (cout, cin, k, k), dtype=np.int8)
    expected = hand_conv2d_reference(x, wt, pad, shift)
    x_blk = x.reshape(icb, B, h, w).transpose(0, 2, 3, 1)[:, :, :, None, :]
    w_blk = wt.reshape(ocb, B, icb, B, k, k).transpose(0, 2, 4, 5, 1, 3)
    exp_blk = expected.reshape(ocb, B, ho, wo).transpose(0, 2, 3, 1)[:, :, :, None, :]

    lay = DramLayout(cfg)
    inp = lay.alloc("inp", x_blk.shape, "int8", "input", x_blk)
    wgt = lay.alloc("wgt", w_blk.shape, "int8", "param", w_blk)
    out = lay.alloc("out", exp_blk.shape, "int8", "output")
    # uops, per virtual thread (its INP/ACC half): one per (oc, ic, ky, kx) for the
    # GEMMs, then one for the reset and the ALU ops
    uops, gemm_uop0, alu_uop = [], [], []
    for vt in range(2):
        ibase, abase = vt * inp_half, vt * acc_half
        gemm_uop0.append(len(uops))
        uops += [Uop(dst=abase + oc * rows * wo,
                     src=ibase + ic * in_rows * in_cols + ky * in_cols + kx,
                     wgt=((oc * icb + ic) * k + ky) * k + kx)
                 for oc in range(ocb) for ic in range(icb) for ky in range(k) for kx in range(k)]
        alu_uop.append(len(uops))
        uops.append(Uop(dst=abase, src=0, wgt=0))
    per_oc = icb * k * k
    uop_base = lay.alloc_uops(len(uops))
    inp0, wgt0, out0 = lay.elem(inp, "inp"), lay.elem(wgt, "wgt"), lay.elem(out, "out")

    insns: list = [Load(mem=MemId.UOP, sram_base=0, dram_base=uop_base, y_size=1,
                        x_size=len(uops), x_stride=len(uops)),
                   Load(mem=MemId.WGT, sram_base=0, dram_base=wgt0, y_size=1, x_size=n_wgt,
                        x_stride=n_wgt)]
    for b in range(bands):
        vt = b % 2
        ibase, abase = vt * inp_half, vt * acc_half
        y0 = b * rows - pad  # first input row of the band (may be negative: padding)
        top = max(0, -y0)
        bottom = max(0, y0 + in_rows - h)
        has_next2 = b + 2 < bands
        for ic in range(icb):
            insns.append(Load(
                mem=MemId.INP, pop_next=b >= 2 and ic == 0, push_next=ic == icb - 1,
                sram_base=ibase + ic * in_rows * in_cols,
                dram_base=inp0 + (ic * h + y0 + top) * w, y_size=in_rows - top - bottom,
                x_size=w, x_stride=w, y_pad_0=top, y_pad_1=bottom, x_pad_0=pad, x_pad_1=pad))
        loops = dict(iter_out=rows, iter_in=wo, dst_factor_out=wo, dst_factor_in=1)
        au, gu = alu_uop[vt], gemm_uop0[vt]
        insns.append(Gemm(pop_prev=True, pop_next=b >= 2, reset=True, uop_bgn=au,
                          uop_end=au + 1, iter_out=1, iter_in=acc_half,
                          dst_factor_in=1, dst_factor_out=0))
        for oc in range(ocb):
            insns.append(Gemm(uop_bgn=gu + oc * per_oc, uop_end=gu + (oc + 1) * per_oc,
                              src_factor_out=in_cols, src_factor_in=1, **loops))
        alu = dict(uop_bgn=au, uop_end=au + 1, iter_out=1, iter_in=acc_half,
                   dst_factor_out=0, dst_factor_in=1, use_imm=True)
        insns += [Alu(alu_op=AluOp.SHR, imm=shift, **alu),
                  Alu(alu_op=AluOp.MIN, imm=127, **alu),
                  Alu(alu_op=AluOp.MAX, imm=-127, push_prev=has_next2, push_next=True, **alu)]
        for oc in range(ocb):
            insns.append(Store(pop_prev=oc == 0,
                               push_prev=oc == ocb - 1 and (has_next2 or b == bands - 1),
                               sram_base=abase + oc * rows * wo,
                               dram_base=out0 + (oc * ho + b * rows) * wo,
                               y_size=rows, x_size=wo, x_stride=wo))
    insns.append(Finish(pop_next=True))
    return lay.finish(insns, uops), exp_blk

