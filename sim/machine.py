"""The accelerator's architectural state (five SRAMs) and what each instruction does to it.

``Machine`` is the datapath half of the golden model: no tokens, no queues,
no timing. ``sim.functional`` drives it in a token-respecting order; the
cycle model may reuse it for its data. Semantics (the contract the RTL is
verified against) are stated in each method's docstring.

SRAM arrays (all zero at construction):

=======  ===================================  =======
name     shape                                dtype
=======  ===================================  =======
``uop``  ``(uop_depth, 3)``: dst, src, wgt    int64
``inp``  ``(inp_depth, BATCH, BLOCK_IN)``     int8
``wgt``  ``(wgt_depth, BLOCK_OUT, BLOCK_IN)`` int8
``acc``  ``(acc_depth, BATCH, BLOCK_OUT)``    int32
``out``  ``(out_depth, BATCH, BLOCK_OUT)``    int8
=======  ===================================  =======
"""
from __future__ import annotations

import numpy as np

from sim.errors import (DramBoundsError, FieldRangeError, SramIndexError, UopRangeError)
from sim.loops import chunks, first_past
from sim.written import Written
from vta_hw import isa
from vta_hw.config import VTAConfig
from vta_hw.alu import CLEARS_ACC, alu_op
from vta_hw.isa import Alu, Finish, Gemm, Load, MemId, Store

_PADS = ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1")


class Machine:
    """SRAM state of one accelerator, and ``execute(insn, index, dram)``.

    Attributes:
        cfg: the config. uop, inp, wgt, acc, out: the SRAMs (module docstring).
        counters: a ``sim.counters.Counters`` updated by every instruction.
        written: ``sim.written.Written``, the entries the running program has
            written; a read of any other entry is recorded there (``strict``:
            raises ``UnwrittenReadError``; ``vta_hw.isa``'s SRAM contract).
            ``sim.prologue.prepare`` clears it when a run starts.
    """

    def __init__(self, cfg: VTAConfig, counters=None, strict: bool = False):
        from sim.counters import Counters
        self.cfg = cfg
        self.uop = np.zeros((cfg.uop_depth, 3), np.int64)
        self.inp = np.zeros((cfg.inp_depth, cfg.BATCH, cfg.BLOCK_IN), np.int8)
        self.wgt = np.zeros((cfg.wgt_depth, cfg.BLOCK_OUT, cfg.BLOCK_IN), np.int8)
        self.acc = np.zeros((cfg.acc_depth, cfg.BATCH, cfg.BLOCK_OUT), np.int32)
        self.out = np.zeros((cfg.out_depth, cfg.BATCH, cfg.BLOCK_OUT), np.int8)
        self.counters = counters if counters is not None else Counters()
        self.written = Written(cfg, strict)

    # ---- checks --------------------------------------------------------------
    def check_static(self, insn, index: int, dram_bytes: int) -> None:
        """Raise if ``insn`` is bad regardless of SRAM contents.

        Covers memory ids, pads, SRAM/DRAM bounds of LOAD/STORE (x_size > 0)
        and uop ranges of GEMM/ALU. Index checks that depend on uop values
        happen in ``execute``, before anything is written.

        Raises:
            FieldRangeError, SramIndexError, DramBoundsError, UopRangeError.
        """
        cfg = self.cfg
        if isinstance(insn, Load):
            if insn.mem == MemId.OUT:
                raise FieldRangeError(
                    "LOAD mem=OUT: the OUT buffer is written only by GEMM/ALU; load INP, "
                    "WGT, UOP or ACC", insn_index=index, field="mem", value="OUT",
                    limit="UOP, WGT, INP, ACC")
            if insn.mem == MemId.UOP:
                for p in _PADS:
                    if getattr(insn, p):
                        raise FieldRangeError(
                            f"LOAD UOP {p}={getattr(insn, p)}: uop loads take no padding "
                            "(must be 0)", insn_index=index, field=p,
                            value=getattr(insn, p), limit=0)
        elif isinstance(insn, Store):
            if insn.mem != MemId.OUT:
                raise FieldRangeError(
                    f"STORE mem={insn.mem.name}: only the OUT buffer can be stored; use mem=OUT",
                    insn_index=index, field="mem", value=insn.mem.name, limit="OUT")
            for p in _PADS:
                if getattr(insn, p):
                    raise FieldRangeError(
                        f"STORE {p}={getattr(insn, p)}: stores take no padding (must be 0)",
                        insn_index=index, field=p, value=getattr(insn, p), limit=0)
        if isinstance(insn, (Load, Store)) and insn.x_size > 0:
            self._check_memop_bounds(insn, index, dram_bytes)
        elif isinstance(insn, (Gemm, Alu)):
            if insn.uop_end < insn.uop_bgn:
                raise UopRangeError(
                    f"uop_end={insn.uop_end} < uop_bgn={insn.uop_bgn}; the range "
                    "[uop_bgn, uop_end) must not be reversed", insn_index=index,
                    field="uop_end", value=insn.uop_end, limit=insn.uop_bgn)
            if insn.uop_end > cfg.uop_depth:
                raise UopRangeError(
                    f"uop_end={insn.uop_end} is past the uop buffer of {cfg.uop_depth} "
                    f"entries; keep uop_end <= {cfg.uop_depth}", insn_index=index,
                    field="uop_end", value=insn.uop_end, limit=cfg.uop_depth)

    def _check_memop_bounds(self, insn, index: int, dram_bytes: int) -> None:
        mem = insn.mem.name.lower()
        depth, eb = self.cfg.depth(mem), self.cfg.elem_bytes(mem)
        if isinstance(insn, Load):
            width = insn.x_pad_0 + insn.x_size + insn.x_pad_1
            rows = insn.y_pad_0 + insn.y_size + insn.y_pad_1
        else:
            width, rows = insn.x_size, insn.y_size
        last = insn.sram_base + rows * width - 1
        if rows * width and last >= depth:
            raise SramIndexError(
                f"{insn.opcode.name} {mem.upper()} writes/reads SRAM entries "
                f"[{insn.sram_base}, {last}] ({rows} rows x {width}, pads included) but the "
                f"{mem.upper()} buffer has {depth} entries; lower sram_base or the sizes",
                insn_index=index, field="sram_base", value=last, limit=depth)
        if insn.y_size:
            end = (insn.dram_base + (insn.y_size - 1) * insn.x_stride + insn.x_size) * eb
            if end > dram_bytes:
                raise DramBoundsError(
                    f"{insn.opcode.name} {mem.upper()} dram_base={insn.dram_base} "
                    f"y_size={insn.y_size} x_stride={insn.x_stride} x_size={insn.x_size} "
                    f"reaches DRAM byte {end - 1} ({eb}-byte elements) but the image has "
                    f"{dram_bytes} bytes; fix dram_base/x_stride", insn_index=index,
                    field="dram_base", value=end, limit=dram_bytes)

    def check_loops(self, insn, index: int) -> None:
        """Raise ``SramIndexError`` if some iteration of GEMM/ALU ``insn`` (instruction
        ``index``) computes an index past its SRAM: dst always; GEMM src/wgt unless
        ``reset``; ALU src when read (not ``reset``, not ``use_imm``). O(uops)."""
        self._check_loop(insn, "dst", "acc", index)
        if isinstance(insn, Gemm) and not insn.reset:
            self._check_loop(insn, "src", "inp", index)
            self._check_loop(insn, "wgt", "wgt", index)
        elif isinstance(insn, Alu) and not (insn.reset or insn.use_imm):
            self._check_loop(insn, "src", "acc", index)

    def _check_loop(self, insn, name: str, buf: str, index: int) -> None:
        """Raise ``SramIndexError`` if some iteration's ``name`` index is past SRAM ``buf``;
        computed from the loop extents (``sim.loops.first_past``), before any index array."""
        depth = self.cfg.depth(buf)
        hit = first_past(insn, self.uop[insn.uop_bgn:insn.uop_end], name, depth)
        if hit is not None:
            k, idx = hit
            raise SramIndexError(
                f"uop iteration {k} computes {name} index {idx}, past the "
                f"{buf.upper()} buffer of {depth} entries; fix the uop or the loop "
                f"extents/factors", insn_index=index, field=name, value=idx, limit=depth)

    # ---- execution ------------------------------------------------------------
    def execute(self, insn, index: int, dram: np.ndarray) -> None:
        """Run one instruction on this state and on ``dram`` (uint8, written by STORE).

        Raises:
            BadProgramError subclasses (see ``check_static``), before any write.
        """
        self.check_static(insn, index, dram.size)
        c = self.counters
        c.insns[insn.opcode.name] = c.insns.get(insn.opcode.name, 0) + 1
        if isinstance(insn, Load):
            self.load(insn, dram)
        elif isinstance(insn, Store):
            self.store(insn, dram, index)
        elif isinstance(insn, Gemm):
            self.gemm(insn, index)
        elif isinstance(insn, Alu):
            self.alu(insn, index)
        elif not isinstance(insn, Finish):  # pragma: no cover - decode yields only these
            raise TypeError(f"not an instruction: {insn!r}")

    def _rows(self, insn, dram: np.ndarray, eb: int) -> np.ndarray:
        """DRAM bytes of a LOAD as ``(y_size, x_size, eb)`` uint8."""
        rows = np.arange(insn.y_size)[:, None] * insn.x_stride + np.arange(insn.x_size)
        addr = (insn.dram_base + rows)[..., None] * eb + np.arange(eb)
        return dram[addr]

    def load(self, insn: Load, dram: np.ndarray) -> None:
        """2-D strided DMA into SRAM ``insn.mem`` with zero padding.

        ``sram[base + (y + y_pad_0) * W + x_pad_0 + x] = dram[dram_base + y*x_stride + x]``
        with ``W = x_pad_0 + x_size + x_pad_1``; every pad slot of the
        ``(y_pad_0 + y_size + y_pad_1) x W`` block gets zeros. ACC loads read
        int32 little-endian and leave OUT alone. ``x_size == 0`` does nothing.
        """
        if insn.x_size == 0:
            self.counters.noop_memops += 1
            return
        mem = insn.mem.name.lower()
        eb = self.cfg.elem_bytes(mem)
        width = insn.x_pad_0 + insn.x_size + insn.x_pad_1
        nrows = insn.y_pad_0 + insn.y_size + insn.y_pad_1
        raw = self._rows(insn, dram, eb)
        self.counters.add_bytes("loaded", mem, raw.size)
        if insn.mem == MemId.UOP:
            data = self._decode_uops(raw.reshape(-1, 4)).reshape(insn.y_size, insn.x_size, 3)
            block = np.zeros((nrows, width, 3), np.int64)
        else:
            sram = getattr(self, mem)
            dt = "<i4" if insn.mem == MemId.ACC else np.int8
            data = raw.reshape(-1).view(dt).astype(sram.dtype).reshape(
                (insn.y_size, insn.x_size) + sram.shape[1:])
            block = np.zeros((nrows, width) + sram.shape[1:], sram.dtype)
        y0, x0 = insn.y_pad_0, insn.x_pad_0
        block[y0:y0 + insn.y_size, x0:x0 + insn.x_size] = data
        self.counters.padded_elems += nrows * width - insn.y_size * insn.x_size
        getattr(self, mem)[insn.sram_base:insn.sram_base + nrows * width] = block.reshape(
            (nrows * width,) + block.shape[2:])
        self.written.mark(mem, slice(insn.sram_base, insn.sram_base + nrows * width))

    def _decode_uops(self, words_le: np.ndarray) -> np.ndarray:
        """``(n, 4)`` little-endian uint8 words -> ``(n, 3)`` int64 (dst, src, wgt),
        the same fields as ``isa.decode_uop``."""
        words = words_le.astype(np.int64) @ (1 << (8 * np.arange(4, dtype=np.int64)))
        return np.stack([(words >> f.lsb) & ((1 << f.width) - 1)
                         for f in isa.uop_layout(self.cfg)], axis=-1)

    def store(self, insn: Store, dram: np.ndarray, index: int) -> None:
        """``dram[dram_base + y*x_stride + x] = out[sram_base + y*x_size + x]`` (int8 bytes)."""
        if insn.x_size == 0:
            self.counters.noop_memops += 1
            return
        eb = self.cfg.out_elem_bytes
        n = insn.y_size * insn.x_size
        self.written.check("out", np.arange(insn.sram_base, insn.sram_base + n), "entries",
                           insn, index)
        data = self.out[insn.sram_base:insn.sram_base + n].view(np.uint8).reshape(
            insn.y_size, insn.x_size, eb)
        rows = np.arange(insn.y_size)[:, None] * insn.x_stride + np.arange(insn.x_size)
        addr = (insn.dram_base + rows)[..., None] * eb + np.arange(eb)
        dram[addr.reshape(-1)] = data.reshape(-1)  # later rows win where rows overlap
        self.counters.add_bytes("stored", "out", data.size)

    def _check_uops_written(self, insn, index: int) -> None:
        self.written.check("uop", np.arange(insn.uop_bgn, insn.uop_end), "uop_bgn..uop_end",
                           insn, index)

    def indices(self, insn, names: tuple[str, ...]) -> list[np.ndarray]:
        """Per uop iteration (loop order o, i, u), the computed index of each name,
        over every iteration at once (``sim.loops.chunks`` bounds the memory instead)."""
        parts = list(chunks(insn, self.uop[insn.uop_bgn:insn.uop_end], names))
        if not parts:
            return [np.zeros(0, np.int64) for _ in names]
        return [np.concatenate([p[j] for p in parts]) for j in range(len(names))]

    def gemm(self, insn: Gemm, index: int) -> None:
        """``acc[dst] += inp[src] @ wgt[wgt]^T`` per uop iteration (int32, wrapping), or
        ``acc[dst] = 0`` with ``reset``; then ``out[dst] = acc[dst]`` truncated to int8.

        Only the indices an iteration uses are checked, from the loop extents before
        anything is written: dst always, src/wgt unless ``reset``. Works through the
        iterations a bounded chunk at a time (``sim.loops.chunks``).
        """
        n = insn.iter_out * insn.iter_in * (insn.uop_end - insn.uop_bgn)
        if n == 0:
            return
        self.check_loops(insn, index)
        self._check_uops_written(insn, index)
        self.counters.gemm_uops += n
        for dst, src, wgt in chunks(insn, self.uop[insn.uop_bgn:insn.uop_end],
                                    ("dst", "src", "wgt")):
            if insn.reset:
                self.acc[dst] = 0
            else:
                self.written.check("inp", src, "src", insn, index)
                self.written.check("wgt", wgt, "wgt", insn, index)
                self.written.check("acc", dst, "dst", insn, index)
                self._accumulate(dst, src, wgt)
            d = np.unique(dst)
            self.out[d] = self.acc[d].astype(np.int8)
            self.written.mark("acc", d)
            self.written.mark("out", d)

    def _accumulate(self, dst: np.ndarray, src: np.ndarray, wgt: np.ndarray) -> None:
        """``acc[dst[i]] += inp[src[i]] @ wgt[wgt[i]]^T`` for every i, int32 wrapping.

        Exact through floating point: an int8 x int8 dot product of BLOCK_IN <= 64
        terms is at most 2**20 in magnitude, so float32 BLAS computes it exactly
        (< 2**24); the per-dst sums are taken in float64 (exact below 2**53) and
        wrapped to int32 once, which equals wrapping after every addition.
        """
        a = self.inp[src].astype(np.float32)
        w = self.wgt[wgt].astype(np.float32)
        prod = a @ w.transpose(0, 2, 1)
        order = np.argsort(dst, kind="stable")
        ds = dst[order]
        starts = np.flatnonzero(np.r_[True, ds[1:] != ds[:-1]])
        sums = np.add.reduceat(prod[order].astype(np.float64), starts, axis=0)
        u = ds[starts]
        self.acc[u] = (self.acc[u].astype(np.int64) + sums.astype(np.int64)).astype(np.int32)

    def alu(self, insn: Alu, index: int) -> None:
        """``acc[dst] = op(acc[dst], b)`` per uop iteration, in loop order, with
        ``b = imm`` (sign-extended) if ``use_imm`` else ``acc[src]``; ``reset``
        writes 0. Each op is ``vta_hw.alu.alu_op`` (int32, wrapping), and
        ``out[dst]`` gets the value truncated to int8; REQUANT writes its value to
        ``out[dst]`` and 0 to ``acc[dst]`` (``vta_hw.alu.CLEARS_ACC``). ``src`` is checked
        only when it is read (not ``use_imm``, not ``reset``).
        """
        n = insn.iter_out * insn.iter_in * (insn.uop_end - insn.uop_bgn)
        if n == 0:
            return
        self.check_loops(insn, index)
        reads_src = not (insn.reset or insn.use_imm)
        self._check_uops_written(insn, index)
        self.counters.alu_uops += n
        self.counters.alu_ops[insn.alu_op.name] = self.counters.alu_ops.get(insn.alu_op.name, 0) + n
        for dst, src in chunks(insn, self.uop[insn.uop_bgn:insn.uop_end], ("dst", "src")):
            if not insn.reset:
                self.written.check("acc", dst, "dst", insn, index)
                if reads_src:  # an earlier iteration of this chunk may have written it
                    self.written.check("acc", src, "src", insn, index, earlier=dst)
            if insn.reset:
                self.acc[dst] = 0
                self.out[dst] = 0
            elif _vectorizable(dst, src if reads_src else None, self.cfg.acc_depth):
                b = np.int64(insn.imm) if insn.use_imm else self.acc[src].astype(np.int64)
                self._alu_write(insn, dst, alu_op(insn.alu_op, self.acc[dst].astype(np.int64), b,
                                                  insn.imm))
            else:
                for k in range(dst.size):
                    b = np.int64(insn.imm) if insn.use_imm else self.acc[src[k]].astype(np.int64)
                    self._alu_write(insn, dst[k], alu_op(
                        insn.alu_op, self.acc[dst[k]].astype(np.int64), b, insn.imm))
            d = np.unique(dst)
            self.written.mark("acc", d)
            self.written.mark("out", d)


    def _alu_write(self, insn: Alu, dst, value: np.ndarray) -> None:
        """An ALU value into ``acc[dst]`` and its int8 truncation into ``out[dst]``; for
        an op of ``vta_hw.alu.CLEARS_ACC`` the value into ``out[dst]`` and 0 into ACC."""
        self.out[dst] = value.astype(np.int8)
        self.acc[dst] = 0 if insn.alu_op in CLEARS_ACC else value


def _vectorizable(dst: np.ndarray, src: np.ndarray | None, depth: int) -> bool:
    """True if one numpy step equals sequential iterations: each dst written once and
    no iteration reads (as src) an entry an earlier iteration wrote."""
    if np.unique(dst).size != dst.size:
        return False
    if src is None:
        return True
    writer = np.full(depth, dst.size, np.int64)
    writer[dst] = np.arange(dst.size)
    return bool(np.all(writer[src] >= np.arange(src.size)))
