"""Seeded random programs that are valid and race-free on any preset.

``random_program(cfg, seed)`` returns ``(program, inputs)``: a ``Program``
whose buffers already carry their initial data (``program.dram_image()`` is
ready to run) and the same arrays by buffer name (``inputs``), so that
``program.dram_image(inputs) == program.dram_image()``.

What a program holds (tens of instructions, for RTL runs under a second):

- buffers: ``inp`` (int8, ``(24, BATCH, BLOCK_IN)``), ``wgt`` (int8,
  ``(12, BLOCK_OUT, BLOCK_IN)``), ``acc`` (int32, ``(12, BATCH, BLOCK_OUT)``),
  ``out`` (int8, ``(24, BATCH, BLOCK_OUT)``, kind "output", random initial
  data so that read-backs of not-yet-stored rows are defined), then the uop
  pool: four segments (GEMM uops of virtual thread 0 and 1, ALU uops of
  thread 0 and 1).
- a prologue that writes every SRAM entry the program may read (``vta_hw.isa``'s
  SRAM contract: a program reads only what it wrote): INP and WGT loads of
  the whole windows (the buffer, repeated) and a GEMM reset (ALU without the
  "gemm" kind) of the ACC (and so OUT) window through the pool's last uop,
  ``Uop(0, 0, 0)``.
- tiles, each owned by a virtual thread (mostly alternating, as VTA's double
  buffering) that works in its own half of every SRAM window: a load stage
  (INP/WGT loads with random pads and strides, INP sometimes read back from
  ``out``), a compute stage (UOP loads when the thread's uops are not
  resident, ACC loads, GEMMs with random loops/factors and resets, ALUs of
  every opcode in imm and src form, negative immediates, resets), and a store
  stage (strided STOREs into ``out``). Stages of neighbouring tiles are
  interleaved at random in program order, as a software pipeline would.
- token-only ``x_size == 0`` LOAD/STOREs (random y_size/pads), spare
  tokens, and the dependency tokens that ``sim.tokens.TokenPlanner`` derives
  from every cross-module read-after-write and write-after-read on the INP,
  WGT and OUT SRAMs and on DRAM bytes. Any token-respecting interleaving
  thus gives the same DRAM image; the tokens balance; the last instruction
  is a FINISH that waits on the last load and the last store, so every other
  instruction has retired when FINISH does.
- hardware-safe queues: every wait points backwards in program order, so
  bounded command queues (fetch in program order) cannot deadlock, and no
  token queue receives more than ``TOKEN_QUEUE_DEPTH`` pushes in the whole
  program, so none can fill.

``kinds`` switches features off: a subset of ``ALL_KINDS``:

- "gemm", "alu": GEMM / ALU instructions; "acc_load": LOADs of ACC;
- "pad": nonzero pads on data LOADs; "noop": token-only ``x_size == 0`` LOAD/STOREs;
- "readback": INP LOADs from the ``out`` buffer (store -> load through DRAM);
- "extra_tokens": spare pushes/pops beyond what the dependences need;
- "overlap": GEMM/ALU whose iterations depend on each other (a dst written
  twice, or an ALU src that another iteration writes), which a pipelined
  datapath must forward or stall for. Without it every GEMM/ALU has
  independent iterations.
"""
from __future__ import annotations

import random as _random

import numpy as np

from sim.tokens import TokenPlanner
from vta_hw import isa
from vta_hw.config import VTAConfig
from vta_hw.isa import Alu, AluOp, Gemm, Load, MemId, Store, Uop
from vta_hw.program import DramLayout, Program
from vta_hw.timing import TOKEN_QUEUE_DEPTH

ALL_KINDS = frozenset({"gemm", "alu", "acc_load", "pad", "noop", "readback", "extra_tokens",
                       "overlap"})
#: size -> (min tiles, max tiles)
SIZES = {"tiny": (1, 2), "small": (2, 4), "medium": (4, 7)}
#: SRAM windows the generator uses (entries), split in two halves, one per virtual thread.
WINDOW = {"inp": 32, "wgt": 16, "acc": 32}
N_ELEMS = {"inp": 24, "wgt": 12, "acc": 12, "out": 24}
#: SRAM -> (the module that writes it, the module that reads it)
_WRITER_READER = {"inp": ("load", "compute"), "wgt": ("load", "compute"),
                  "out": ("compute", "store")}


class _Hazards:
    """Last writer/reader seq per SRAM entry and DRAM byte; turns accesses into needs.

    Each resource has one writer module: INP/WGT load, OUT compute, DRAM store.
    """

    def __init__(self, cfg: VTAConfig, dram_bytes: int):
        self.w = {r: np.full(cfg.depth(r), -1) for r in _WRITER_READER}
        self.r = {r: np.full(cfg.depth(r), -1) for r in _WRITER_READER}
        self.w["dram"] = np.full(dram_bytes, -1)
        self.dram_r = {"load": np.full(dram_bytes, -1), "compute": np.full(dram_bytes, -1)}

    def needs(self, module: str, reads, writes) -> dict[str, int]:
        need: dict[str, int] = {}

        def bump(m, arr, idx):
            if len(idx):
                need[m] = max(need.get(m, -1), int(arr[idx].max()))
        for res, idx in reads:
            bump("store" if res == "dram" else _WRITER_READER[res][0], self.w[res], idx)
        for res, idx in writes:
            if res == "dram":
                for m, arr in self.dram_r.items():
                    bump(m, arr, idx)
            else:
                bump(_WRITER_READER[res][1], self.r[res], idx)
        return need

    def update(self, module: str, seq: int, reads, writes) -> None:
        for res, idx in reads:
            (self.dram_r[module] if res == "dram" else self.r[res])[idx] = seq
        for res, idx in writes:
            self.w[res][idx] = seq


class _Gen:
    def __init__(self, cfg: VTAConfig, seed: int, size: str, kinds: frozenset):
        self.cfg, self.kinds = cfg, kinds
        self.rng = _random.Random(seed)
        self.np_rng = np.random.default_rng(seed)
        self.win = {r: min(cfg.depth(r), w) for r, w in WINDOW.items()}
        self.win["out"] = self.win["acc"]
        self.slot = max(1, min(8, cfg.uop_depth // 4))
        self.layout = DramLayout(cfg)
        self._alloc_buffers()
        self.uop_base = self.layout.alloc_uops(len(self.pool))
        self.uop_sram: list = [None] * cfg.uop_depth  # generator's model of the uop SRAM
        self.hz = _Hazards(cfg, 4 * (self.uop_base + len(self.pool)))
        self.tp = TokenPlanner(self.rng, 0.15 if "extra_tokens" in kinds else 0.0)
        self.tiles = self.rng.randint(*SIZES[size])

    # ---- layout -------------------------------------------------------------------
    def half(self, res: str) -> int:
        return self.win[res] // 2 if self.win[res] >= 2 else self.win[res]

    def base(self, res: str, thread: int) -> int:
        return thread * self.half(res) if self.win[res] >= 2 else 0

    def _alloc_buffers(self) -> None:
        cfg, r = self.cfg, self.np_rng
        shapes = {"inp": (N_ELEMS["inp"], cfg.BATCH, cfg.BLOCK_IN),
                  "wgt": (N_ELEMS["wgt"], cfg.BLOCK_OUT, cfg.BLOCK_IN),
                  "acc": (N_ELEMS["acc"], cfg.BATCH, cfg.BLOCK_OUT),
                  "out": (N_ELEMS["out"], cfg.BATCH, cfg.BLOCK_OUT)}
        self.inputs, self.specs = {}, {}
        for name, shape in shapes.items():
            if name == "acc":
                data = r.integers(-3000, 3000, shape, dtype=np.int32)
                big = r.random(shape) < 0.1
                data[big] = r.integers(-2**31, 2**31 - 1, int(big.sum()), dtype=np.int64)
            else:
                data = r.integers(-128, 128, shape, dtype=np.int8)
            kind = {"inp": "input", "wgt": "param", "acc": "input", "out": "output"}[name]
            self.inputs[name] = data
            self.specs[name] = self.layout.alloc(name, shape, data.dtype.name, kind, data)
        self.pool = []  # segments: (gemm t0, gemm t1, alu t0, alu t1), self.slot uops each,
        # then the prologue's Uop(0, 0, 0)
        for kind in ("gemm", "alu"):
            for t in (0, 1):
                for _ in range(self.slot):
                    dst = self.base("acc", t) + self.rng.randrange(self.half("acc"))
                    if kind == "gemm":
                        src = self.base("inp", t) + self.rng.randrange(self.half("inp"))
                        wgt = self.base("wgt", t) + self.rng.randrange(self.half("wgt"))
                    else:
                        src = self.base("acc", t) + self.rng.randrange(self.half("acc"))
                        wgt = self.rng.randrange(1 << self.cfg.uop_wgt_bits) \
                            if self.rng.random() < 0.3 else 0  # ALU ignores wgt
                    self.pool.append(Uop(dst, src, wgt))
        self.pool.append(Uop(0, 0, 0))

    # ---- emission -----------------------------------------------------------------
    def emit(self, module, insn, reads=(), writes=()) -> None:
        g = self.tp.emit(module, insn, self.hz.needs(module, reads, writes))
        self.hz.update(module, self.tp.seq[g], reads, writes)

    def _dram_bytes(self, mem, dram_base, y, x, stride):
        """DRAM byte addresses a 2-D DMA of ``mem`` elements touches."""
        eb = self.cfg.elem_bytes(mem)
        rows = np.arange(y)[:, None] * stride + np.arange(x)
        return ((dram_base + rows)[..., None] * eb + np.arange(eb)).reshape(-1)

    def _shape2d(self, room: int, pads: bool):
        """(y, x, yp0, yp1, xp0, xp1) with the padded block fitting ``room`` entries."""
        r = self.rng
        y, x = r.randint(1, 3), r.randint(1, 4)
        p = [r.choice((0, 0, 1, 2)) if pads else 0 for _ in range(4)]
        while (p[0] + y + p[1]) * (p[2] + x + p[3]) > room:
            if any(p):
                p[max(range(4), key=lambda k: p[k])] -= 1
            elif x > 1:
                x -= 1
            else:
                y -= 1
        return y, x, *p

    def _dram_place(self, n_elems: int, y: int, x: int):
        stride = x + self.rng.choice((0, 0, 1, 2))
        span = (y - 1) * stride + x
        while span > n_elems:
            stride, span = x, (y - 1) * x + x
            if span > n_elems:
                y -= 1
                span = (y - 1) * stride + x
        return y, stride, self.rng.randint(0, n_elems - span)

    def load(self, thread: int, mem: MemId) -> None:
        """A padded strided LOAD of INP/WGT (load module) or ACC (compute module)."""
        res = mem.name.lower()
        half = self.half(res)
        y, x, yp0, yp1, xp0, xp1 = self._shape2d(half, "pad" in self.kinds)
        src = "out" if (mem == MemId.INP and "readback" in self.kinds
                        and self.rng.random() < 0.3) else res
        n = N_ELEMS[src]
        y, stride, off = self._dram_place(n, y, x)
        rows, width = yp0 + y + yp1, xp0 + x + xp1
        sram = self.base(res, thread) + self.rng.randint(0, half - rows * width)
        dram_base = self.layout.elem(self.specs[src], res) + off
        insn = Load(mem=mem, sram_base=sram, dram_base=dram_base, y_size=y, x_size=x,
                    x_stride=stride, y_pad_0=yp0, y_pad_1=yp1, x_pad_0=xp0, x_pad_1=xp1)
        reads = [("dram", self._dram_bytes(res, dram_base, y, x, stride))]
        if mem == MemId.ACC:
            self.emit("compute", insn, reads)
        else:
            self.emit("load", insn, reads, [(res, np.arange(sram, sram + rows * width))])

    def store(self, thread: int) -> None:
        half = self.half("out")
        y, x = self.rng.randint(1, 2), self.rng.randint(1, 4)
        while y * x > half:
            x, y = (x - 1, y) if x > 1 else (x, y - 1)
        y, stride, off = self._dram_place(N_ELEMS["out"], y, x)
        sram = self.base("out", thread) + self.rng.randint(0, half - y * x)
        dram_base = self.layout.elem(self.specs["out"], "out") + off
        insn = Store(sram_base=sram, dram_base=dram_base, y_size=y, x_size=x, x_stride=stride)
        self.emit("store", insn, [("out", np.arange(sram, sram + y * x))],
                  [("dram", self._dram_bytes("out", dram_base, y, x, stride))])

    def noop(self, module: str) -> None:
        r = self.rng
        pads = {} if module != "load" and not (module == "compute" and r.random() < 0.5) else \
            {p: r.randint(0, 3) for p in ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1")}
        mem = {"load": r.choice((MemId.INP, MemId.WGT)), "store": MemId.OUT,
               "compute": MemId.ACC if pads else MemId.UOP}[module]
        cls = Store if module == "store" else Load
        self.emit(module, cls(mem=mem, y_size=r.randint(0, 3), x_size=0,
                              x_stride=r.randint(0, 4), sram_base=r.randint(0, 3),
                              dram_base=r.randint(0, 3), **pads))

    def ensure_uops(self, kind: str, thread: int) -> int:
        """Load the thread's uop segment of ``kind`` unless resident; returns its SRAM base."""
        seg = (0 if kind == "gemm" else 2) + thread
        at = seg * self.slot
        want = self.pool[at:at + self.slot]
        if self.uop_sram[at:at + self.slot] != want:
            n = self.slot
            two_rows = n % 2 == 0 and n > 1 and self.rng.random() < 0.5
            y, x = (2, n // 2) if two_rows else (1, n)
            self.emit("compute", Load(mem=MemId.UOP, sram_base=at, dram_base=self.uop_base + at,
                                      y_size=y, x_size=x, x_stride=x),
                      [("dram", np.arange(4 * (self.uop_base + at), 4 * (self.uop_base + at + n)))])
            self.uop_sram[at:at + self.slot] = want
        return at

    def _loops(self, uops, fields: dict[str, tuple[str, int]]):
        """Random iter_out/iter_in and factors keeping every index in its thread half.

        ``fields``: name -> (resource, thread base) for dst/src/wgt.
        """
        r = self.rng
        io, ii = r.randint(1, 3), r.randint(1, 3)
        kw = {"iter_out": io, "iter_in": ii}
        for name, (res, base) in fields.items():
            slack = self.half(res) - 1 - max(getattr(u, name) - base for u in uops)
            fo = r.randint(0, slack // (io - 1)) if io > 1 else r.randint(0, 2)
            rest = slack - (io - 1) * fo if io > 1 else slack
            fi = r.randint(0, rest // (ii - 1)) if ii > 1 else r.randint(0, 2)
            kw[f"{name}_factor_out"], kw[f"{name}_factor_in"] = fo, fi
        return kw

    def _iter_idx(self, uops, kw, name):
        fo, fi = kw[f"{name}_factor_out"], kw[f"{name}_factor_in"]
        loops = [(o, i) for o in range(kw["iter_out"]) for i in range(kw["iter_in"])]
        return np.array([getattr(u, name) + o * fo + i * fi for o, i in loops for u in uops])

    def _overlaps(self, uops, kw, reads_src: bool) -> bool:
        """True if a dst repeats, or (``reads_src``) some iteration reads as src an entry
        another iteration writes: the cases that need forwarding in a pipelined datapath."""
        dst = self._iter_idx(uops, kw, "dst")
        if len(set(dst.tolist())) != dst.size:
            return True
        if not reads_src:
            return False
        src = self._iter_idx(uops, kw, "src")
        return any(s in set(dst.tolist()) - {d} for s, d in zip(src.tolist(), dst.tolist()))

    def gemm_or_alu(self, kind: str, thread: int) -> None:
        """A GEMM or ALU of ``thread`` on its resident uops; without the "overlap" kind,
        redrawn until no iteration depends on another (one iteration at worst)."""
        r = self.rng
        at = self.ensure_uops(kind, thread)
        acc = ("acc", self.base("acc", thread))
        reset = r.random() < (0.2 if kind == "gemm" else 0.1)
        op = r.choice(list(AluOp))
        use_imm = r.random() < 0.5
        for _ in range(20):
            n = r.randint(1, min(3, self.slot))
            bgn = at + r.randint(0, self.slot - n)
            uops = self.uop_sram[bgn:bgn + n]
            if kind == "gemm":
                kw = self._loops(uops, {"dst": acc, "src": ("inp", self.base("inp", thread)),
                                        "wgt": ("wgt", self.base("wgt", thread))})
            else:
                kw = self._loops(uops, {"dst": acc, "src": acc})
            if "overlap" in self.kinds or not self._overlaps(
                    uops, kw, kind == "alu" and not (use_imm or reset)):
                break
        else:
            n, bgn, uops = 1, at, self.uop_sram[at:at + 1]
            kw.update(iter_out=1, iter_in=1)
        if kind == "gemm":
            insn = Gemm(reset=reset, uop_bgn=bgn, uop_end=bgn + n, **kw)
            reads = [] if reset else [("inp", self._iter_idx(uops, kw, "src")),
                                      ("wgt", self._iter_idx(uops, kw, "wgt"))]
        else:
            if op == AluOp.SHR:
                imm = r.randint(-40, 40)
            elif r.random() < 0.3:
                imm = r.choice((-32768, -1, 0, 1, 32767))
            else:
                imm = r.randint(-300, 300)
            insn = Alu(reset=reset, uop_bgn=bgn, uop_end=bgn + n, alu_op=op, use_imm=use_imm,
                       imm=imm, **kw)
            reads = []
        self.emit("compute", insn, reads, [("out", self._iter_idx(uops, kw, "dst"))])

    # ---- program --------------------------------------------------------------------
    def prologue(self) -> None:
        """Write every SRAM entry of the windows before any tile reads one."""
        for mem in (MemId.INP, MemId.WGT):
            res = mem.name.lower()
            base, w = self.layout.elem(self.specs[res], res), self.win[res]
            for sram in range(0, w, N_ELEMS[res]):  # the buffer, again while it is shorter
                x = min(w - sram, N_ELEMS[res])
                self.emit("load", Load(mem=mem, sram_base=sram, dram_base=base, y_size=1,
                                       x_size=x, x_stride=x),
                          [("dram", self._dram_bytes(res, base, 1, x, x))],
                          [(res, np.arange(sram, sram + x))])
        at = len(self.pool) - 1  # Uop(0, 0, 0), loaded into uop SRAM entry 0
        self.emit("compute", Load(mem=MemId.UOP, dram_base=self.uop_base + at, y_size=1,
                                  x_size=1, x_stride=1),
                  [("dram", np.arange(4 * (self.uop_base + at), 4 * (self.uop_base + at + 1)))])
        self.uop_sram[0] = self.pool[at]
        w = self.win["acc"]
        reset = Gemm if "gemm" in self.kinds else Alu
        self.emit("compute", reset(reset=True, uop_bgn=0, uop_end=1, iter_out=w, iter_in=1,
                                   dst_factor_out=1),
                  [], [("out", np.arange(w))])

    def stage(self, tile: int, thread: int, stage: int) -> None:
        r, k = self.rng, self.kinds
        if stage == 0:
            for mem in r.sample([MemId.INP, MemId.WGT, MemId.INP], r.randint(1, 3)):
                self.load(thread, mem)
            if "noop" in k and r.random() < 0.3:
                self.noop("load")
        elif stage == 1:
            if "acc_load" in k and r.random() < 0.4:
                self.load(thread, MemId.ACC)
            ops = [o for o in ("gemm", "gemm", "alu") if o in k]
            for _ in range(r.randint(1, 3) if ops else 0):
                self.gemm_or_alu(r.choice(ops), thread)
            if "noop" in k and r.random() < 0.3:
                self.noop("compute")
        else:
            for _ in range(r.randint(1, 2)):
                self.store(thread)
            if "noop" in k and r.random() < 0.3:
                self.noop("store")

    def build(self) -> tuple[Program, dict[str, np.ndarray]]:
        r = self.rng
        threads = [t % 2 if r.random() < 0.8 else r.randint(0, 1) for t in range(self.tiles)]
        nxt = [0] * self.tiles
        self.prologue()
        while any(s < 3 for s in nxt):
            ready = [t for t in range(self.tiles)
                     if nxt[t] < 3 and (t == 0 or nxt[t - 1] > nxt[t])]
            t = ready[0] if r.random() < 0.5 else r.choice(ready)
            self.stage(t, threads[t], nxt[t])
            nxt[t] += 1
        insns = self.tp.finish()
        worst = max(self.tp.pushes.values())
        if worst > TOKEN_QUEUE_DEPTH:  # never seen: tiles push at most a few tokens each
            raise RuntimeError(f"generator bug: {worst} pushes into one token queue, more than "
                               f"TOKEN_QUEUE_DEPTH={TOKEN_QUEUE_DEPTH}; use a smaller size")
        program = self.layout.finish(insns, self.pool)
        return program, {k: v.copy() for k, v in self.inputs.items()}


def random_program(cfg: VTAConfig, seed: int, *, size: str = "small",
                   kinds=ALL_KINDS) -> tuple[Program, dict[str, np.ndarray]]:
    """A random, valid, race-free program for ``cfg`` (see the module docstring).

    Args:
        cfg: any valid config.
        seed: the same seed (and cfg, size, kinds) gives the same program.
        size: "tiny" (1-2 tiles), "small" (2-4) or "medium" (4-7); a tile is
            roughly 5-12 instructions.
        kinds: subset of ``ALL_KINDS`` ("gemm", "alu", "acc_load", "pad",
            "noop", "readback", "extra_tokens", "overlap") to include; see the
            module docstring.

    Returns:
        ``(program, inputs)``: inputs by buffer name (int8/int32 arrays), also
        stored as the buffers' data.

    Raises:
        ValueError: unknown size or kind.
    """
    if size not in SIZES:
        raise ValueError(f"size must be one of {', '.join(SIZES)}, not {size!r}")
    kinds = frozenset(kinds)
    if not kinds <= ALL_KINDS:
        raise ValueError(f"unknown kind(s) {sorted(kinds - ALL_KINDS)}; "
                         f"known: {', '.join(sorted(ALL_KINDS))}")
    return _Gen(cfg, seed, size, kinds).build()


def describe_program(program: Program) -> str:
    """The instruction stream, one ``isa.describe`` line per instruction, numbered."""
    return "\n".join(f"{k:3d} {isa.describe(i)}" for k, i in enumerate(program.insns))
