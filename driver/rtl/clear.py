"""The SRAM clear the driver runs on the RTL before each program (the SRAM contract).

``vta_hw.isa`` ("SRAM contract"): every execution starts a program from zeroed
SRAMs. The simulators do; the RTL, like a board, keeps its SRAMs between
programs, so ``driver.rtl.run_programs`` runs ``clear_program(cfg)`` before
each program, in the same simulation. It writes zeros to every entry of every
SRAM with the accelerator's own instructions, and is a program of its own: the
cycles it costs (about the uop depth / bus words per cycle + the INP, WGT and
ACC depths) are not counted in the next program's cycles, so the RTL's counts
stay equal to ``sim.cycle``'s.

- UOP: one LOAD of ``uop_depth`` zero uops from the clear program's image.
- INP, WGT (load module): LOADs of one zero element with the largest pads
  (up to 31 x 31 entries each), the last one moved back to end at the depth.
- ACC and OUT: one GEMM with ``reset`` over every ACC entry, through uop 0
  (which the UOP clear has just made zero: dst = o * iter_in + i).
The load module's last LOAD pushes a token that FINISH pops, so the run ends
once every SRAM is clear.
"""
from __future__ import annotations

import dataclasses
from functools import lru_cache

from vta_hw import isa
from vta_hw.config import VTAConfig
from vta_hw.isa import Finish, Gemm, Load, MemId, Uop
from vta_hw.program import DramLayout, Program

#: Largest pad (4-bit fields): a LOAD of one element fills up to (2*15+1)**2 entries.
_PAD = 15


def _fill(mem: MemId, depth: int, zero: int) -> list[Load]:
    """LOADs of the zero element ``zero`` (in ``mem`` elements) whose padded blocks cover
    entries [0, depth)."""
    w = min(2 * _PAD + 1, depth)
    h = min(2 * _PAD + 1, depth // w)
    bases = list(range(0, depth - h * w, h * w)) + [depth - h * w]
    pads = {"y_pad_0": (h - 1) // 2, "y_pad_1": h // 2,
            "x_pad_0": (w - 1) // 2, "x_pad_1": w // 2}
    return [Load(mem=mem, sram_base=b, dram_base=zero, y_size=1, x_size=1, x_stride=1, **pads)
            for b in bases]


def _reset_acc(cfg: VTAConfig) -> Gemm:
    """A GEMM with reset over every ACC entry: dst = o * iter_in + i for uop 0 = (0, 0, 0)."""
    widths = {f.name: f.width for f in isa.layout(isa.Opcode.GEMM, cfg)}
    cap = min((1 << widths["iter_in"]) - 1, (1 << widths["dst_factor_out"]) - 1)
    n_in = 1 << min(cfg.log_acc_depth, cap.bit_length() - 1)
    n_out = cfg.acc_depth // n_in
    if n_out >= 1 << widths["iter_out"]:
        raise ValueError(f"config {cfg.name}: ACC depth {cfg.acc_depth} is beyond one GEMM's "
                         f"loops ({n_out} x {n_in}); the SRAM clear needs a second GEMM")
    return Gemm(reset=True, uop_bgn=0, uop_end=1, iter_out=n_out, iter_in=n_in,
                dst_factor_out=n_in, dst_factor_in=1)


@lru_cache(maxsize=None)
def clear_program(cfg: VTAConfig) -> Program:
    """The program that zeroes every SRAM entry of ``cfg`` (module docstring); its image
    (``dram_image()``) holds one zero element and ``uop_depth`` zero uops.

    Raises:
        ValueError: the ACC depth needs more iterations than one GEMM's loop fields hold.
    """
    lay = DramLayout(cfg)
    zero = lay.alloc("zero", (max(cfg.elem_bytes("inp"), cfg.elem_bytes("wgt")),), "int8")
    ub = lay.alloc_uops(cfg.uop_depth)
    loads = _fill(MemId.INP, cfg.inp_depth, lay.elem(zero, "inp")) + _fill(
        MemId.WGT, cfg.wgt_depth, lay.elem(zero, "wgt"))
    loads[-1] = dataclasses.replace(loads[-1], push_next=True)
    insns = loads + [Load(mem=MemId.UOP, dram_base=ub, y_size=1, x_size=cfg.uop_depth,
                          x_stride=cfg.uop_depth),
                     _reset_acc(cfg), Finish(pop_prev=True)]
    return lay.finish(insns, [Uop(0, 0, 0)] * cfg.uop_depth)
