"""Directed programs for the RTL tests: each a serial chain of instructions.

``Serial`` allocates buffers, collects instructions in program order and
links every change of module with a dependency token (through a compute
token-only LOAD between load and store), so each instruction starts after
the previous one retired; FINISH ends the chain. ``DIRECTED`` maps a name
to a builder ``cfg -> Program``.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from sim.tokens import sync_insn
from vta_hw.isa import LINKS, Alu, AluOp, Finish, Gemm, Load, MemId, Store, Uop, module_of
from vta_hw.program import DramLayout, Program, alignment


class Serial:
    def __init__(self, cfg, seed: int = 0):
        self.cfg = cfg
        self.rng = np.random.default_rng(seed)
        self.layout = DramLayout(cfg)
        self.specs = {}
        self.insns = []
        self.uops = []
        self.uop_elem = None

    def buf(self, name, data=None, *, shape=None, dtype="int8", kind="input", lo=None, hi=None):
        if data is None:
            lo = lo if lo is not None else (-128 if dtype == "int8" else -2**31)
            hi = hi if hi is not None else (128 if dtype == "int8" else 2**31)
            data = self.rng.integers(lo, hi, shape).astype(dtype)
        self.specs[name] = self.layout.alloc(name, data.shape, data.dtype.name, kind, data)
        return self.specs[name]

    def gap(self, nbytes: int) -> None:
        """Skip DRAM so that the next buffer starts ``nbytes`` further on."""
        self.layout.alloc(f"_gap{len(self.specs)}", (nbytes,), "uint8", "scratch")
        self.specs[f"_gap{len(self.specs)}"] = None

    def set_uops(self, uops) -> int:
        """Place the uop buffer (after the data buffers); returns its base in uop elements."""
        self.uops = list(uops)
        self.uop_elem = self.layout.alloc_uops(len(self.uops))
        return self.uop_elem

    def at(self, name, mem) -> int:
        return self.layout.elem(self.specs[name], mem)

    def add(self, *insns) -> None:
        self.insns.extend(insns)

    def load(self, mem, sram_base, dram_base, y, x, stride, pads=(0, 0, 0, 0)):
        self.add(Load(mem=mem, sram_base=sram_base, dram_base=dram_base, y_size=y, x_size=x,
                      x_stride=stride, y_pad_0=pads[0], y_pad_1=pads[1], x_pad_0=pads[2],
                      x_pad_1=pads[3]))

    def store_out(self, n: int, name: str = "out") -> None:
        """Allocate output buffer ``name`` of ``n`` OUT elements and STORE out[0:n] into it."""
        self.buf(name, np.zeros((n, self.cfg.BATCH, self.cfg.BLOCK_OUT), np.int8), kind="output")
        self.add(Store(mem=MemId.OUT, sram_base=0, dram_base=self.at(name, "out"), y_size=1,
                       x_size=n, x_stride=n))

    def program(self) -> Program:
        chain = []
        for insn in self.insns + [Finish()]:
            mod = module_of(insn)
            if chain:
                pmod = module_of(chain[-1])
                if {pmod, mod} == {"load", "store"}:
                    chain.append(sync_insn("compute"))
                    _link(chain, pmod, "compute")
                    pmod = "compute"
                chain.append(insn)
                if pmod != mod:
                    _link(chain, pmod, mod)
                continue
            chain.append(insn)
        if self.uop_elem is None:
            self.set_uops([])
        return self.layout.finish(chain, self.uops)


def _link(chain, producer, consumer):
    _, push, pop = LINKS[(producer, consumer)]
    chain[-2] = dataclasses.replace(chain[-2], **{push: True})
    chain[-1] = dataclasses.replace(chain[-1], **{pop: True})


def _eye_wgt(s: Serial) -> None:
    cfg = s.cfg
    eye = np.zeros((1, cfg.BLOCK_OUT, cfg.BLOCK_IN), np.int8)
    for k in range(min(cfg.BLOCK_OUT, cfg.BLOCK_IN)):
        eye[0, k, k] = 1
    s.buf("eye", eye)


def _gemm_copy(s: Serial, n: int, uop_dram: int) -> None:
    """out[j] = inp[j] . eye^T = inp[j] for j < n: one uop (0,0,0) looped n times."""
    s.load(MemId.WGT, 0, s.at("eye", "wgt"), 1, 1, 1)
    s.load(MemId.UOP, 0, uop_dram, 1, 1, 1)
    loop = dict(uop_bgn=0, uop_end=1, iter_out=n, iter_in=1, dst_factor_out=1, src_factor_out=1)
    s.add(Gemm(reset=True, **loop), Gemm(**loop))


def inp_padding(cfg, pads, seed=0) -> Program:
    """LOAD INP with ``pads`` = (y_pad_0, y_pad_1, x_pad_0, x_pad_1); read back through GEMM."""
    s = Serial(cfg, seed)
    ys, xs, stride = 2, 3, 5
    s.buf("inp", shape=(ys * stride + 1, cfg.BATCH, cfg.BLOCK_IN))
    _eye_wgt(s)
    u = s.set_uops([Uop(0, 0, 0)])
    n = 1 + (pads[0] + ys + pads[1]) * (pads[2] + xs + pads[3])
    s.load(MemId.INP, 0, s.at("inp", "inp"), 1, 1, 1)          # entry 0: not padding
    s.load(MemId.INP, 1, s.at("inp", "inp") + 1, ys, xs, stride, pads)
    _gemm_copy(s, n, u)
    s.store_out(n)
    return s.program()


def wgt_padding(cfg, pads, seed=0) -> Program:
    """LOAD WGT with padding; out[j] = wgt[j][:, 0] through inp rows equal to e_0."""
    s = Serial(cfg, seed)
    ys, xs, stride = 2, 2, 3
    s.buf("wgt", shape=(ys * stride, cfg.BLOCK_OUT, cfg.BLOCK_IN), lo=1, hi=100)
    e0 = np.zeros((1, cfg.BATCH, cfg.BLOCK_IN), np.int8)
    e0[0, :, 0] = 1
    s.buf("e0", e0)
    u = s.set_uops([Uop(0, 0, 0)])
    n = (pads[0] + ys + pads[1]) * (pads[2] + xs + pads[3])
    s.load(MemId.WGT, 0, s.at("wgt", "wgt"), ys, xs, stride, pads)
    s.load(MemId.INP, 0, s.at("e0", "inp"), 1, 1, 1)
    s.load(MemId.UOP, 0, u, 1, 1, 1)
    loop = dict(uop_bgn=0, uop_end=1, iter_out=n, iter_in=1, dst_factor_out=1, wgt_factor_out=1)
    s.add(Gemm(reset=True, **loop), Gemm(**loop))
    s.store_out(n)
    return s.program()


def acc_padding(cfg, pads, seed=0) -> Program:
    """LOAD ACC with padding; ALU ADD imm 0 copies the low bytes to OUT."""
    s = Serial(cfg, seed)
    ys, xs, stride = 3, 2, 2
    s.buf("acc", shape=(ys * stride, cfg.BATCH, cfg.BLOCK_OUT), dtype="int32")
    u = s.set_uops([Uop(0, 0, 0)])
    n = (pads[0] + ys + pads[1]) * (pads[2] + xs + pads[3])
    s.load(MemId.ACC, 0, s.at("acc", "acc"), ys, xs, stride, pads)
    s.load(MemId.UOP, 0, u, 1, 1, 1)
    s.add(Alu(uop_bgn=0, uop_end=1, iter_out=n, iter_in=1, dst_factor_out=1, src_factor_out=1,
              alu_op=AluOp.ADD, use_imm=True, imm=0))
    s.store_out(n)
    return s.program()


def uop_misaligned(cfg, seed=0) -> Program:
    """LOAD UOP rows that start mid-beat in DRAM and land at odd SRAM entries."""
    s = Serial(cfg, seed)
    s.buf("inp", shape=(16, cfg.BATCH, cfg.BLOCK_IN))
    _eye_wgt(s)
    uops = [Uop(dst=j, src=(5 * j + 3) % 16, wgt=0) for j in range(16)]
    u = s.set_uops(uops)
    s.load(MemId.INP, 0, s.at("inp", "inp"), 1, 16, 16)
    s.load(MemId.WGT, 0, s.at("eye", "wgt"), 1, 1, 1)
    # rows of 3 uops, 5 apart in DRAM, starting at uop 1 -> SRAM from entry 3, packed
    s.load(MemId.UOP, 3, u + 1, 3, 3, 5)
    s.load(MemId.UOP, 12, u + 4, 1, 7, 7)
    for bgn, end in ((3, 12), (12, 19)):
        s.add(Gemm(reset=True, uop_bgn=bgn, uop_end=end, iter_out=1, iter_in=1),
              Gemm(uop_bgn=bgn, uop_end=end, iter_out=1, iter_in=1))
    s.store_out(16)
    return s.program()


def alu_ops(cfg, seed=0) -> Program:
    """Every ALU op, immediate (negative ones included) and src forms, and a RAW chain."""
    s = Serial(cfg, seed)
    vals = np.array([0, 1, -1, 7, -7, 31, -32, 40, 2**31 - 1, -2**31, 123456, -654321])
    acc = np.resize(vals, (32, cfg.BATCH, cfg.BLOCK_OUT)).astype(np.int32)
    acc = np.ascontiguousarray(np.roll(acc.reshape(32, -1), 1, axis=1).reshape(acc.shape))
    s.buf("acc", acc)
    u = s.set_uops([Uop(0, 16, 0), Uop(1, 0, 0)])
    s.load(MemId.UOP, 0, u, 1, 2, 2)
    cases = [(op, True, imm) for op in AluOp for imm in (3, -3, 0, 33, -40)] + \
            [(op, False, 0) for op in AluOp]
    n = 0
    for op, use_imm, imm in cases:
        s.load(MemId.ACC, 0, s.at("acc", "acc"), 1, 32, 32)
        s.add(Alu(uop_bgn=0, uop_end=1, iter_out=4, iter_in=2, dst_factor_out=2,
                  dst_factor_in=1, src_factor_out=3, src_factor_in=1, alu_op=op,
                  use_imm=use_imm, imm=imm))
        s.buf(f"out{n}", np.zeros((8, cfg.BATCH, cfg.BLOCK_OUT), np.int8), kind="output")
        s.add(Store(mem=MemId.OUT, sram_base=0, dram_base=s.at(f"out{n}", "out"), y_size=1,
                    x_size=8, x_stride=8))
        n += 1
    # read-after-write chain: acc[k+1] += acc[k] for k < 10, one iteration after another
    s.load(MemId.ACC, 0, s.at("acc", "acc"), 1, 32, 32)
    s.add(Alu(uop_bgn=1, uop_end=2, iter_out=10, iter_in=1, dst_factor_out=1, src_factor_out=1,
              alu_op=AluOp.ADD))
    s.add(Alu(uop_bgn=1, uop_end=2, iter_out=10, iter_in=1, dst_factor_out=1, src_factor_out=1,
              alu_op=AluOp.MUL, reset=False))
    s.store_out(12)
    return s.program()


def alu_mul(cfg, seed=0) -> Program:
    """ALU MUL (several cycles per iteration): 1, 2 and 12 iterations, immediate
    (negative) and src forms, dependent back-to-back iterations (a chain and a
    repeated square), several uops per loop, reset, and MUL between other ops;
    then every byte of the 16 results is exposed in OUT (copy, shift right by
    8k) so all 32 bits of each product are checked."""
    s = Serial(cfg, seed)
    vals = np.array([3, -5, 7, -1, 2**31 - 1, -2**31, 65537, -65536, 123456789, -98765,
                     0, 1, 0x7FFF, -0x8000, 46341, -46341])
    acc = np.resize(vals, (32, cfg.BATCH * cfg.BLOCK_OUT))
    acc = np.stack([np.roll(row, k) for k, row in enumerate(acc)])
    acc = acc.reshape(32, cfg.BATCH, cfg.BLOCK_OUT).astype(np.int32)
    s.buf("acc", acc)
    u = s.set_uops([Uop(0, 16, 0), Uop(1, 0, 0), Uop(2, 2, 0), Uop(16, 0, 0)])
    s.load(MemId.UOP, 0, u, 1, 4, 4)
    s.load(MemId.ACC, 0, s.at("acc", "acc"), 1, 32, 32)
    M = AluOp.MUL

    def alu(op, bgn, end, n_out, n_in, d_out=0, d_in=0, s_out=0, s_in=0, **kw):
        s.add(Alu(uop_bgn=bgn, uop_end=end, iter_out=n_out, iter_in=n_in, dst_factor_out=d_out,
                  dst_factor_in=d_in, src_factor_out=s_out, src_factor_in=s_in, alu_op=op, **kw))

    alu(M, 0, 1, 1, 1)                                   # acc[0] *= acc[16]
    alu(M, 0, 1, 2, 1, d_out=1, use_imm=True, imm=-3)    # acc[0..1] *= -3
    alu(M, 0, 1, 3, 4, 4, 1, 4, 1)                       # acc[0..11] *= acc[16..27]
    alu(M, 1, 2, 10, 1, 1, 0, 1, 0)                      # acc[k+1] *= acc[k], k < 10
    alu(M, 2, 3, 4, 1)                                   # acc[2] = acc[2]**16
    alu(M, 0, 3, 3, 1, 4, 0, 4, 0)                       # three uops, three times
    alu(AluOp.ADD, 0, 1, 16, 1, 1, 0, 1, 0, use_imm=True, imm=1000)
    alu(M, 0, 1, 4, 2, 2, 1, 3, 1)                       # overlapping dst/src windows
    alu(AluOp.SHR, 0, 1, 16, 1, 1, 0, 1, 0, use_imm=True, imm=3)
    alu(M, 0, 1, 2, 1, 1, 0, 1, 0, use_imm=True, imm=-32768)
    alu(AluOp.MAX, 0, 1, 16, 1, 1, 0, use_imm=True, imm=-7)
    alu(M, 0, 1, 1, 1, reset=True)                       # a reset MUL writes 0
    alu(M, 3, 4, 1, 1)                                   # acc[16] *= acc[0] (= 0)
    alu(M, 0, 1, 16, 1, 1, 0, 1, 0)                      # acc[k] *= acc[k] (squares)
    for k in range(4):                                   # byte k of acc[0..15] -> out_k
        alu(AluOp.ADD, 3, 4, 16, 1, 1, 0, 1, 0, reset=True)
        alu(AluOp.ADD, 3, 4, 16, 1, 1, 0, 1, 0)          # acc[16+j] = acc[j]
        alu(AluOp.SHR, 3, 4, 16, 1, 1, 0, use_imm=True, imm=8 * k)
        s.buf(f"out{k}", np.zeros((16, cfg.BATCH, cfg.BLOCK_OUT), np.int8), kind="output")
        s.add(Store(mem=MemId.OUT, sram_base=16, dram_base=s.at(f"out{k}", "out"), y_size=1,
                    x_size=16, x_stride=16))
    return s.program()


def gemm_loops(cfg, seed=0) -> Program:
    """GEMM with nested loops, factors, reset, accumulation into repeated destinations."""
    s = Serial(cfg, seed)
    s.buf("inp", shape=(24, cfg.BATCH, cfg.BLOCK_IN))
    s.buf("wgt", shape=(8, cfg.BLOCK_OUT, cfg.BLOCK_IN))
    uops = [Uop(dst=j % 3, src=j, wgt=(2 * j) % 8) for j in range(6)]
    u = s.set_uops(uops)
    s.load(MemId.INP, 0, s.at("inp", "inp"), 1, 24, 24)
    s.load(MemId.WGT, 0, s.at("wgt", "wgt"), 2, 4, 4)
    s.load(MemId.UOP, 0, u, 1, 6, 6)
    s.add(Gemm(reset=True, uop_bgn=0, uop_end=3, iter_out=4, iter_in=2, dst_factor_out=3,
               dst_factor_in=0))
    s.add(Gemm(uop_bgn=0, uop_end=6, iter_out=4, iter_in=2, dst_factor_out=3, dst_factor_in=0,
               src_factor_out=4, src_factor_in=2, wgt_factor_out=1, wgt_factor_in=0))
    s.add(Gemm(uop_bgn=2, uop_end=5, iter_out=3, iter_in=3, dst_factor_out=1, dst_factor_in=1,
               src_factor_out=1, src_factor_in=5, wgt_factor_out=0, wgt_factor_in=1))
    s.add(Gemm(uop_bgn=4, uop_end=4, iter_out=3, iter_in=3))    # empty range
    s.store_out(12)
    return s.program()


def _near_page_end(s: Serial, nbytes: int) -> None:
    """Add a gap so that the next buffer, of ``nbytes`` bytes, starts shortly before a
    4096-byte boundary: 128 bytes or half the buffer before it, whichever is less, rounded
    down to the DRAM alignment but at least one alignment unit."""
    a = alignment(s.cfg)
    start = -(-s.layout._top // a) * a   # buffers and uops allocated so far
    target = (start // 4096 + 1) * 4096 - max(min(128, nbytes // 2) // a * a, a)
    if target <= start:
        target += 4096
    s.gap(target - start)


def dma_long_rows(cfg, seed=0) -> Program:
    """Rows of many bursts that cross a 4096-byte page, for LOAD INP, LOAD ACC and STORE."""
    s = Serial(cfg, seed)
    _eye_wgt(s)
    n = min(cfg.inp_depth, cfg.acc_depth, 96) - 1
    bufs = {}
    for name, shape, dtype in (("inp", (n + 1, cfg.BATCH, cfg.BLOCK_IN), "int8"),
                               ("acc", (n, cfg.BATCH, cfg.BLOCK_OUT), "int32")):
        _near_page_end(s, int(np.prod(shape)) * np.dtype(dtype).itemsize)
        bufs[name] = s.buf(name, shape=shape, dtype=dtype)
    u = s.set_uops([Uop(0, 0, 0)])
    s.load(MemId.INP, 0, s.at("inp", "inp") + 1, 1, n, n)
    s.load(MemId.ACC, 0, s.at("acc", "acc"), 1, n, n)
    s.load(MemId.WGT, 0, s.at("eye", "wgt"), 1, 1, 1)
    s.load(MemId.UOP, 0, u, 1, 1, 1)
    s.add(Gemm(uop_bgn=0, uop_end=1, iter_out=n, iter_in=1, dst_factor_out=1, src_factor_out=1))
    _near_page_end(s, n * cfg.out_elem_bytes)
    s.store_out(n)
    bufs["out"] = s.specs["out"]
    for name, b in bufs.items():
        assert b.offset // 4096 != (b.offset + b.nbytes - 1) // 4096, f"{name} must cross a page"
    return s.program()


PADS = {"y_pad_0": (2, 0, 0, 0), "y_pad_1": (0, 3, 0, 0), "x_pad_0": (0, 0, 2, 0),
        "x_pad_1": (0, 0, 0, 3), "all": (1, 2, 3, 1)}

DIRECTED = {}
for side, pads in PADS.items():
    DIRECTED[f"inp_pad_{side}"] = (lambda p: lambda cfg: inp_padding(cfg, p))(pads)
    DIRECTED[f"wgt_pad_{side}"] = (lambda p: lambda cfg: wgt_padding(cfg, p))(pads)
    DIRECTED[f"acc_pad_{side}"] = (lambda p: lambda cfg: acc_padding(cfg, p))(pads)
DIRECTED["uop_misaligned"] = uop_misaligned
DIRECTED["alu_ops"] = alu_ops
DIRECTED["alu_mul"] = alu_mul
DIRECTED["gemm_loops"] = gemm_loops
DIRECTED["dma_long_rows"] = dma_long_rows
