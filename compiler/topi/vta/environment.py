"""The accelerator as the compiler sees it: memory scopes, element shapes, dtypes.

``Env(cfg)`` derives from a ``vta_hw.config.VTAConfig`` everything the VTA
operator schedules and the VTA code generator agree on (TVM v0.18
``vta/python/vta/environment.py`` plays this role there):

==========================  =================  ==============================
scope                        SRAM (``MemId``)   one element (values, dtype)
==========================  =================  ==============================
``"local.inp_buffer"``       INP                BATCH x BLOCK_IN, int8
``"local.wgt_buffer"``       WGT                BLOCK_OUT x BLOCK_IN, int8
``"local.acc_buffer"``       ACC (and OUT)      BATCH x BLOCK_OUT, int32
``"local.uop_buffer"``       UOP                one 32-bit micro-op
==========================  =================  ==============================

The OUT SRAM mirrors ACC entry by entry (GEMM/ALU write both; OUT holds the
int8 truncation), so a STORE reads an ``acc_buffer`` tile by its ACC indices.
Loop IR buffers in these scopes keep their value shape ``(entries, rows,
cols)``; instruction operands address whole elements.
"""
from __future__ import annotations

import dataclasses

from vta_hw.config import VTAConfig
from vta_hw.isa import MemId

INP_SCOPE = "local.inp_buffer"
WGT_SCOPE = "local.wgt_buffer"
ACC_SCOPE = "local.acc_buffer"
UOP_SCOPE = "local.uop_buffer"
#: SRAM scope -> the memory id its DMA uses.
SCOPE_MEM = {INP_SCOPE: MemId.INP, WGT_SCOPE: MemId.WGT, ACC_SCOPE: MemId.ACC, UOP_SCOPE: MemId.UOP}

#: Names of the tensor intrinsics (values of the "tensorize" AttrStmt).
GEMM = "vta.gemm"
ALU_PREFIX = "vta.alu."
#: Pragma keys understood by ``compiler.codegen.vta``.
DMA_COPY = "dma_copy"
UOP_SCOPE_PRAGMA = "uop_scope"


@dataclasses.dataclass(frozen=True)
class Env:
    """Scopes, element shapes and per-buffer capacities of one accelerator config."""

    cfg: VTAConfig

    @property
    def BATCH(self) -> int:
        return self.cfg.BATCH

    @property
    def BLOCK_IN(self) -> int:
        return self.cfg.BLOCK_IN

    @property
    def BLOCK_OUT(self) -> int:
        return self.cfg.BLOCK_OUT

    inp_scope = INP_SCOPE
    wgt_scope = WGT_SCOPE
    acc_scope = ACC_SCOPE
    uop_scope = UOP_SCOPE

    @property
    def inp_elem(self) -> tuple[int, int]:
        """Value shape of one INP element: (BATCH, BLOCK_IN)."""
        return (self.BATCH, self.BLOCK_IN)

    @property
    def wgt_elem(self) -> tuple[int, int]:
        return (self.BLOCK_OUT, self.BLOCK_IN)

    @property
    def acc_elem(self) -> tuple[int, int]:
        return (self.BATCH, self.BLOCK_OUT)

    def elem_values(self, scope: str) -> int:
        """Values per element of an SRAM scope."""
        r, c = {INP_SCOPE: self.inp_elem, WGT_SCOPE: self.wgt_elem,
                ACC_SCOPE: self.acc_elem}[scope]
        return r * c

    def depth(self, scope: str) -> int:
        """Entries of the SRAM behind ``scope``."""
        return self.cfg.depth(SCOPE_MEM[scope].name.lower())

    def mem(self, scope: str) -> MemId:
        try:
            return SCOPE_MEM[scope]
        except KeyError:
            raise ValueError(f"scope must be one of {', '.join(SCOPE_MEM)}, not {scope!r}") from None
