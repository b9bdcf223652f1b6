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

TVM's names, for schedules written as VTA's tutorials teach::

    env = Env.from_config("1x16_i8w8a32_15_15_18_17")   # or Env(VTAConfig)
    env.BATCH, env.BLOCK_IN, env.BLOCK_OUT                # 1, 16, 16
    env.inp_dtype, env.wgt_dtype, env.acc_dtype            # "int8", "int8", "int32"
    env.inp_scope, env.wgt_scope, env.acc_scope            # the scopes above
    s[A_buf].pragma(axis, env.dma_copy)                    # a DMA copy (LOAD/STORE)
    s[C_buf].tensorize(axis, env.gemm)                     # the GEMM intrinsic
    s[R].pragma(axis, env.alu)                             # an elementwise stage on the ALU
    s[C_buf].pragma(axis, env.uop_pragma)                  # loops folded into one GEMM/ALU

As in TVM, ``env.alu`` marks an elementwise stage in ``local.acc_buffer``
whose body the back end pattern-matches into ALU instructions
(``compiler.codegen.vta.alu_pragma`` lists the forms: add, max, min, shifts,
mul, with immediates or a second accumulator tensor, nested, e.g. a clip).
The loops around a tensorized GEMM fold into the instruction by themselves;
``env.uop_pragma`` folds a chosen nest explicitly.
"""
from __future__ import annotations

import dataclasses
import functools

from vta_hw.config import VTAConfig, load_config
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
ALU_PRAGMA = "alu"
#: Element dtypes of the SRAMs (fixed by the ISA: int8 operands, int32 accumulators).
INP_DTYPE, WGT_DTYPE, ACC_DTYPE, OUT_DTYPE = "int8", "int8", "int32", "int8"


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

    @property
    def INP_WIDTH(self) -> int:
        """Bits of an input value (8)."""
        return self.cfg.INP_WIDTH

    @property
    def WGT_WIDTH(self) -> int:
        """Bits of a weight value (8)."""
        return self.cfg.WGT_WIDTH

    @property
    def ACC_WIDTH(self) -> int:
        """Bits of an accumulator value (32)."""
        return self.cfg.ACC_WIDTH

    inp_scope = INP_SCOPE
    wgt_scope = WGT_SCOPE
    acc_scope = ACC_SCOPE
    uop_scope = UOP_SCOPE
    #: pragma key: the loop nest below (with one tensorized intrinsic at its leaf) is one
    #: GEMM/ALU instruction, its loops folded into the instruction's two loops and its uops
    uop_pragma = UOP_SCOPE_PRAGMA
    inp_dtype = INP_DTYPE
    wgt_dtype = WGT_DTYPE
    acc_dtype = ACC_DTYPE
    out_dtype = OUT_DTYPE
    #: pragma key: the loop nest below is a DMA copy (LOAD into an SRAM, or STORE from ACC)
    dma_copy = DMA_COPY
    #: pragma key: the elementwise stage below runs on the ALU (its body pattern-matched)
    alu = ALU_PRAGMA

    @classmethod
    def from_config(cls, config: "str | VTAConfig") -> "Env":
        """``Env`` of a preset name, a JSON config path, or a ``VTAConfig``."""
        return cls(config if isinstance(config, VTAConfig) else load_config(config))

    @functools.cached_property
    def gemm(self):
        """The GEMM tensor intrinsic (``"vta.gemm"``) for ``tensorize``: one ACC element
        ``(BATCH, BLOCK_OUT)`` int32 += INP ``(BATCH, BLOCK_IN)`` int8 . WGT ``(BLOCK_OUT,
        BLOCK_IN)`` int8, transposed."""
        from .intrin import gemm_intrin
        return gemm_intrin(self)

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
        """Values per element of an SRAM scope (the code generator asks once per operand of
        every instruction, so the table is built once)."""
        return self._elem_values[scope]

    @functools.cached_property
    def _elem_values(self) -> dict[str, int]:
        return {s: r * c for s, (r, c) in ((INP_SCOPE, self.inp_elem), (WGT_SCOPE, self.wgt_elem),
                                           (ACC_SCOPE, self.acc_elem))}

    def depth(self, scope: str) -> int:
        """Entries of the SRAM behind ``scope``."""
        return self.cfg.depth(SCOPE_MEM[scope].name.lower())

    def mem(self, scope: str) -> MemId:
        try:
            return SCOPE_MEM[scope]
        except KeyError:
            raise ValueError(f"scope must be one of {', '.join(SCOPE_MEM)}, not {scope!r}") from None
