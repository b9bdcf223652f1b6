"""Small builders shared by the cycle-model tests."""
from __future__ import annotations

from vta_hw import isa
from vta_hw.config import load_config
from vta_hw.program import DramLayout, Program

DEFAULT = load_config()


def program(insns, cfg=DEFAULT, uops=(), data_bytes: int = 1 << 16) -> Program:
    """A program with one scratch buffer of ``data_bytes`` at DRAM byte 0 (element 0 of
    every buffer), ``uops`` after it and ``insns`` after those."""
    lay = DramLayout(cfg)
    lay.alloc("data", (data_bytes,), "int8", "scratch")
    lay.alloc_uops(max(len(uops), 1))
    return lay.finish(list(insns), list(uops) or [isa.Uop()])


def gemm(n: int, **kw) -> isa.Gemm:
    """A GEMM of ``n`` uop iterations on uop 0 (all indices 0)."""
    return isa.Gemm(uop_bgn=0, uop_end=1, iter_out=n, iter_in=1, **kw)
