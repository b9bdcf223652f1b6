"""Micro-op kernels: fold a uop loop nest into one GEMM/ALU instruction, and the uop cache.

A GEMM/ALU instruction runs ``for o < iter_out, for i < iter_in, for u in
[uop_bgn, uop_end)``, each index being ``uop.x + o*x_factor_out + i*x_factor_in``.
``fold(indices)`` takes, per operand, the element index of every iteration of
a kernel's loop nest as an array of shape ``(U, O, I)`` (U: the outer loops,
flattened, which become uops; O and I: the two innermost loops) and returns
the uops and factors, folding the two innermost loops when every operand is
affine in them with non-negative factors that fit their fields, else only the
innermost, else none (each unfolded loop becomes more uops).

``UopCache`` places uop sequences in the uop SRAM: a sequence already
resident is reused; a new one is appended (a LOAD UOP from its copy in DRAM),
and when the SRAM is full everything is evicted. The compute module runs its
instructions in order, so overwriting uops that earlier GEMMs used is safe.
"""
from __future__ import annotations

import numpy as np

from vta_hw.config import LOOP_ITER_BITS, VTAConfig
from vta_hw.isa import Load, MemId, Uop

from .eval import CodegenError


def _field_bits(cfg: VTAConfig) -> dict[str, int]:
    return {"dst": cfg.uop_dst_bits, "src": cfg.uop_src_bits, "wgt": cfg.uop_wgt_bits}


def _try(idx: dict[str, np.ndarray], cfg: VTAConfig):
    bits = _field_bits(cfg)
    U, O, I = next(iter(idx.values())).shape
    if O >= 1 << LOOP_ITER_BITS or I >= 1 << LOOP_ITER_BITS:
        return None
    factors = {}
    o = np.arange(O)[None, :, None]
    i = np.arange(I)[None, None, :]
    for name, a in idx.items():
        fo = int(a[0, 1, 0] - a[0, 0, 0]) if O > 1 else 0
        fi = int(a[0, 0, 1] - a[0, 0, 0]) if I > 1 else 0
        if fo < 0 or fi < 0 or max(fo, fi) >= 1 << bits[name]:
            return None
        if not np.array_equal(a, a[:, :1, :1] + o * fo + i * fi):
            return None
        factors[name] = (fo, fi)
    uops = [Uop(**{n: int(a[u, 0, 0]) for n, a in idx.items()}) for u in range(U)]
    return uops, O, I, factors


def fold(idx: dict[str, np.ndarray], cfg: VTAConfig):
    """``(uops, iter_out, iter_in, {operand: (factor_out, factor_in)})`` for a kernel whose
    operand indices are ``idx[operand]`` of shape ``(U, O, I)`` (module docstring).

    Raises:
        CodegenError: an index is negative or does not fit its uop field.
    """
    bits = _field_bits(cfg)
    for name, a in idx.items():
        if a.size and (a.min() < 0 or a.max() >= 1 << bits[name]):
            raise CodegenError(f"uop {name} index {int(a.max())} does not fit its "
                               f"{bits[name]}-bit field on {cfg.name}")
    U, O, I = next(iter(idx.values())).shape
    got = _try(idx, cfg)
    if got is None:  # fold the innermost loop only
        got = _try({n: a.reshape(U * O, 1, I) for n, a in idx.items()}, cfg)
    if got is None:
        got = _try({n: a.reshape(U * O * I, 1, 1) for n, a in idx.items()}, cfg)
    return got


class UopCache:
    """Uop sequences resident in the uop SRAM, and their copies in DRAM (module docstring)."""

    def __init__(self, cfg: VTAConfig):
        self.cfg = cfg
        self.dram: list[Uop] = []          # every distinct sequence, once
        self._dram_at: dict[int, int] = {}   # sequence number -> its first uop in DRAM
        self._sram_at: dict[int, int] = {}   # sequence number -> its first uop in SRAM
        self._seq: dict[tuple, int] = {}     # distinct sequence -> its number
        self._by_id: dict[int, tuple] = {}   # id(uops list) -> (the list, its number)
        self._top = 0
        self.loads = 0

    def place(self, uops: list[Uop]) -> tuple[int, Load | None]:
        """``(uop_bgn, load)``: where ``uops`` sit in the uop SRAM, and the LOAD UOP
        to emit first (None if resident). The load's ``dram_base`` counts from the
        start of the program's uop area; ``rebase`` adds the area's base.

        Raises:
            CodegenError: the sequence is longer than the uop SRAM.
        """
        hit = self._by_id.get(id(uops))   # a kernel's list comes back on every replay:
        if hit is None or hit[0] is not uops:   # hash its uops once, not per placement
            hit = self._by_id[id(uops)] = (uops, self._seq.setdefault(tuple(uops),
                                                                       len(self._seq)))
        key = hit[1]
        if key in self._sram_at:
            return self._sram_at[key], None
        n = len(uops)
        if n > self.cfg.uop_depth:
            raise CodegenError(f"a kernel needs {n} uops but the uop buffer holds "
                               f"{self.cfg.uop_depth} on {self.cfg.name}; use smaller tiles")
        if key not in self._dram_at:
            self._dram_at[key] = len(self.dram)
            self.dram.extend(uops)
        if self._top + n > self.cfg.uop_depth:
            self._sram_at.clear()
            self._top = 0
        base = self._top
        self._sram_at[key] = base
        self._top += n
        self.loads += 1
        return base, Load(mem=MemId.UOP, sram_base=base, dram_base=self._dram_at[key],
                          y_size=1, x_size=n, x_stride=n)
