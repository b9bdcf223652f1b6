"""Conv2d problem shapes on packed layouts, and the tile search for the accelerator.

A ``Tiling`` picks, per output tile, ``th`` x ``tw`` output pixels of ``toc``
output-channel blocks, accumulated over reduction steps of ``tic``
input-channel blocks x ``tkh`` kernel rows, with ``vt`` virtual threads (each
owns 1/vt of every SRAM). ``search`` enumerates candidates that fit the
buffers of the config and ranks them by an estimate of cycles: the compute
module's GEMM uops, its epilogue uops and the fixed cost of each of its
instructions (decode and pipeline depth, ``vta_hw.timing``) and ACC vector loads,
against the load and store modules' DMAs (per instruction, per row and per burst
as ``vta_hw.timing`` states them, at the DRAM latency and bandwidth; padding rows
without the port) and the memory port's time fetching the instructions, overlapped
as the virtual threads allow. The smallest
tiling (one pixel, one block, one kernel row) fits every shipped preset, so
the search space is never empty there; otherwise ``TilingError`` names the
buffer that is too small.
"""
from __future__ import annotations

import dataclasses
import functools
import itertools

from vta_hw import timing
from vta_hw.config import VTAConfig
from vta_hw.timing import DramTiming
from vta_hw.errors import VtaError



class TilingError(VtaError, ValueError):
    """No tiling of a conv2d fits the accelerator's buffers."""


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


@dataclasses.dataclass(frozen=True)
class Conv2dShape:
    """A conv2d in elements of the packed layout (NB, CB, OB: batch and channel blocks)."""
    NB: int
    CB: int
    H: int
    W: int
    OB: int
    KH: int
    KW: int
    sh: int = 1
    sw: int = 1
    ph: int = 0
    pw: int = 0

    def __post_init__(self):
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            lo = 0 if f.name in ("ph", "pw") else 1
            if not isinstance(v, int) or v < lo:
                raise ValueError(f"conv2d {f.name} must be an int >= {lo}, not {v!r}")
        if self.OH < 1 or self.OW < 1:
            raise ValueError(f"conv2d output would be {self.OH}x{self.OW}: kernel "
                             f"{self.KH}x{self.KW} larger than the padded input "
                             f"{self.H + 2 * self.ph}x{self.W + 2 * self.pw}")

    @property
    def OH(self) -> int:
        return (self.H + 2 * self.ph - self.KH) // self.sh + 1

    @property
    def OW(self) -> int:
        return (self.W + 2 * self.pw - self.KW) // self.sw + 1


@dataclasses.dataclass(frozen=True)
class Tiling:
    th: int
    tw: int
    toc: int
    tic: int
    tkh: int
    vt: int
    #: weights resident: each output-channel tile's weights (all input channels and
    #: kernel rows) are loaded once into one WGT buffer shared by the threads
    wres: bool = False

    def rows_in(self, s: Conv2dShape) -> int:
        return (self.th - 1) * s.sh + self.tkh

    def cols_in(self, s: Conv2dShape) -> int:
        return (self.tw - 1) * s.sw + s.KW

    def buffers(self, s: Conv2dShape, bias: int) -> dict[str, int]:
        """Entries each virtual thread needs per SRAM. ``bias``: per-output-channel int32
        vectors held in ACC per channel block (0 or False: none; 1 or True: the bias;
        2: the bias and per-channel shifts)."""
        return {"inp": self.tic * self.rows_in(s) * self.cols_in(s),
                "wgt": self.toc * (s.CB * s.KH if self.wres else self.tic * self.tkh) * s.KW,
                "acc": self.toc * self.th * self.tw + self.toc * int(bias),
                "uop": self.toc * self.tic * self.tkh * s.KW}


def _cands(n: int) -> list[int]:
    if n <= 8:
        return list(range(1, n + 1))
    out = {n, 1} | {d for d in range(1, n + 1) if n % d == 0}
    out |= {1 << k for k in range(n.bit_length()) if 1 << k <= n}
    out |= {_ceil(n, k) for k in range(1, 9)}
    return sorted(out)


#: Cycles a LOAD or STORE instruction holds its module besides its rows (``vta_hw.timing``):
#: the dequeue-to-TOKENS decode, the cycle to the first ROW, FIN to RETIRE, back in IDLE.
DMA_INSN_CYCLES = timing.INSN_DECODE_CYCLES + 3


def _dma_cycles(rows: float, row_bytes: int, cfg: VTAConfig, dram: DramTiming,
                write: bool = False) -> float:
    """Cycles one LOAD (or, ``write``, STORE) instruction of ``rows`` rows of ``row_bytes``
    holds its module, as ``vta_hw.timing`` states them: ``DMA_INSN_CYCLES`` (dequeue,
    decode, FIN, RETIRE), then per row one ROW cycle and bursts of at most
    ``max_burst_beats`` beats, one after another, each paying the DRAM latency once (a
    write also waits for its completion, one cycle more)."""
    burst = dram.max_burst_beats * cfg.bus_bytes
    bursts = -(-row_bytes // burst)
    beats = -(-row_bytes // cfg.bus_bytes)
    per_burst = dram.latency + 1 + int(write)
    return DMA_INSN_CYCLES + rows * (
        1 + bursts * per_burst + (beats - bursts) * dram.beat_interval(cfg.bus_bytes))


def fetch_cycles(cfg: VTAConfig, dram: DramTiming | None = None) -> float:
    """Cycles of the memory port that fetching one 128-bit instruction takes (fetch has the
    port's highest priority, so a DMA waits them out): its bus beats, and its share of
    the DRAM latency of a fetch burst (``vta_hw.timing``: fetch reads the program in bursts
    of at most ``max_burst_beats`` beats within a page). 4.5 on a 32-bit port, 2.3 on the
    default 64-bit one, 2.1 on a 128-bit one (8 bytes per cycle and latency 32 each)."""
    dram = dram or DramTiming()
    insn_bytes = 16
    burst_bytes = min(dram.max_burst_beats * cfg.bus_bytes, dram.page_bytes)
    beats = insn_bytes * dram.beat_interval(cfg.bus_bytes) / cfg.bus_bytes
    return beats + (dram.latency + 1) * insn_bytes / burst_bytes


def epilogue_passes(bias: int) -> int:
    """Compute uops per output element besides the GEMMs (``conv2d.fused_epilogue``): with
    the bias as the only ACC vector (``bias == 1``) one REQUANT (the GEMM reset runs once
    per thread, not per tile: REQUANT leaves zeros); otherwise the GEMM reset, ADD bias,
    SHR, MAX and MIN (5; the multiplier's passes are not counted)."""
    return 1 if bias == 1 else 5


#: Cycles a GEMM or ALU instruction holds the compute module beyond its uops
#: (``vta_hw.timing``): decode, the pipeline's drain to RETIRE, and the cycle back in IDLE.
INSN_OVERHEAD = timing.INSN_DECODE_CYCLES + timing.GEMM_PIPELINE_DEPTH + 1


def insn_counts(t: Tiling, s: Conv2dShape, bias: int) -> tuple[int, int]:
    """``(per reduction step, per output tile besides the steps)``: the instructions the code
    generator emits (``topi.vta.conv2d``; a 2-D DMA per copy whose loops fold into rows at
    one stride). A step: the input window (one DMA per input-channel block, one for all
    of them when the window is one row), the weights (one DMA per output-channel block
    when both several input-channel blocks and not all kernel rows are in the step, else
    one; none when resident) and one GEMM. A tile: ``bias`` ACC vector loads, the
    ``epilogue_passes`` instructions (a REQUANT, or the reset and four ALU passes) and the
    store (one per output-channel block when the tile's rows are not contiguous in DRAM)."""
    inp = 1 if t.rows_in(s) == 1 else t.tic
    wgt = 0 if t.wres else (t.toc if t.tic > 1 and t.tkh < s.KH else 1)
    store = t.toc if t.th > 1 and t.tw < s.OW else 1
    return inp + wgt + 1, int(bias) + epilogue_passes(bias) + store


def compute_overhead(t: Tiling, s: Conv2dShape, cfg: VTAConfig, bias: int,
                     dram: DramTiming | None = None) -> dict[str, float]:
    """Cycles per output tile that the compute module spends besides uops (what the
    pipeline depth and the per-tile loads cost; the old estimate missed them):
    ``"steps"``, the reduction steps' GEMM instructions (``INSN_OVERHEAD`` each);
    ``"epilogue"``, the ``epilogue_passes`` instructions (likewise);
    ``"vectors"``, the ``bias`` ACC vector loads (one DMA of ``toc`` ACC elements each,
    which the compute module runs itself)."""
    dram = dram or DramTiming()
    steps = _ceil(s.CB, t.tic) * _ceil(s.KH, t.tkh)
    vec = int(bias) * _dma_cycles(1, t.toc * cfg.acc_elem_bytes, cfg, dram)
    return {"steps": steps * INSN_OVERHEAD,
            "epilogue": epilogue_passes(bias) * INSN_OVERHEAD, "vectors": vec}


def pad_rows(t: Tiling, s: Conv2dShape) -> float:
    """The fraction of the input windows' rows (over every row tile and kernel-row step,
    edge tiles and the last step clipped) that lie in the zero padding: a LOAD fills such a
    row with zeros, one element per cycle, without the memory port. Only the first and
    last row tiles reach into the padding, so this costs a few iterations per tiling."""
    if not s.ph:
        return 0.0
    n_h, n_kh = _ceil(s.OH, t.th), _ceil(s.KH, t.tkh)
    near = _ceil(s.ph + s.KH, t.th * s.sh) + 1
    pad = 0
    for i in sorted({*range(min(n_h, near)), *range(max(0, n_h - near), n_h)}):
        h = min(t.th, s.OH - i * t.th)
        for k in range(n_kh):
            lo = i * t.th * s.sh - s.ph + k * t.tkh
            n = (h - 1) * s.sh + min(t.tkh, s.KH - k * t.tkh)
            pad += min(n, max(0, -lo) + max(0, lo + n - s.H))
    return pad / (n_kh * (s.OH - n_h) * s.sh + n_h * s.KH)


def _inp_dma(t: Tiling, s: Conv2dShape, cfg: VTAConfig, dram: DramTiming) -> float:
    """Cycles of one reduction step's input window: per input-channel block a DMA of
    ``rows_in`` rows, or one DMA of ``tic`` rows when the window is one row; the share
    ``pad_rows`` of the rows in the padding costs its ROW cycle and a cycle per element."""
    p, cols = pad_rows(t, s), t.cols_in(s)
    row = cols * cfg.inp_elem_bytes
    if t.rows_in(s) == 1:
        return _dma_cycles(t.tic * (1 - p), row, cfg, dram) + t.tic * p * (1 + cols)
    rows = t.rows_in(s)
    return t.tic * (_dma_cycles(rows * (1 - p), row, cfg, dram) + rows * p * (1 + cols))


def _out_dma(t: Tiling, s: Conv2dShape, cfg: VTAConfig, dram: DramTiming) -> float:
    """Cycles of a tile's store: per output-channel block ``th`` rows of ``tw`` elements,
    one DMA of ``toc`` rows when that is one row (one output row, or whole rows: contiguous
    in DRAM)."""
    b = cfg.out_elem_bytes
    if t.th == 1 or t.tw >= s.OW:
        return _dma_cycles(t.toc, t.th * t.tw * b, cfg, dram, write=True)
    return t.toc * _dma_cycles(t.th, t.tw * b, cfg, dram, write=True)


def _wgt_dma(t: Tiling, s: Conv2dShape, cfg: VTAConfig, dram: DramTiming) -> float:
    """Cycles of one reduction step's weight loads: per output-channel block ``tic`` rows
    of ``tkh * KW`` elements, one row when they are contiguous in DRAM (all kernel rows),
    one DMA when there is one such row per block (the blocks are rows at one stride), and
    one row for the whole tile when all input channels are in the step too (the code
    generator merges contiguous rows into one DMA row)."""
    row = t.tkh * s.KW * cfg.wgt_elem_bytes
    if t.tkh < s.KH:
        if t.tic == 1:
            return _dma_cycles(t.toc, row, cfg, dram)
        return t.toc * _dma_cycles(t.tic, row, cfg, dram)
    if t.tic < s.CB:
        return _dma_cycles(t.toc, t.tic * row, cfg, dram)
    return _dma_cycles(1, t.toc * t.tic * row, cfg, dram)


def estimate(t: Tiling, s: Conv2dShape, cfg: VTAConfig, bias: int,
             dram: DramTiming | None = None) -> float:
    """Estimated cycles of a tiling (a ranking, not a prediction): the compute module's
    GEMM uops plus ``compute_overhead`` per tile, against the DMAs of the load and store
    modules, overlapped as two virtual threads allow."""
    dram = dram or DramTiming()
    n_sp = s.NB * _ceil(s.OH, t.th) * _ceil(s.OW, t.tw)
    T = n_sp * _ceil(s.OB, t.toc)
    R = _ceil(s.CB, t.tic) * _ceil(s.KH, t.tkh)
    gemm = s.NB * s.OB * s.OH * s.OW * s.CB * s.KH * s.KW
    over = compute_overhead(t, s, cfg, bias, dram)
    # the epilogue's uops: one per output element and operation (edge tiles are clipped)
    e_tile = (epilogue_passes(bias) * s.NB * s.OB * s.OH * s.OW / T + over["epilogue"]
              + over["vectors"])
    inp = _inp_dma(t, s, cfg, dram)
    wgt = _wgt_dma(t, s, cfg, dram)
    out = _out_dma(t, s, cfg, dram)
    resident = 0.0
    if t.wres:  # weights once per channel tile, not overlapped; none per step
        resident = _ceil(s.OB, t.toc) * _dma_cycles(
            1, t.toc * s.CB * s.KH * s.KW * cfg.wgt_elem_bytes, cfg, dram)
        wgt = 0.0
    g_step = gemm / (T * R) + over["steps"] / R
    # the memory port's time per step on the load side: the DMAs and fetching the step's
    # instructions (fetch goes first on the port, so the loads wait it out)
    fetch = fetch_cycles(cfg, dram)
    n_step, n_tile = insn_counts(t, s, bias)
    load = inp + wgt + fetch * n_step
    serial = R * (g_step + load) + e_tile + out + fetch * n_tile
    if t.vt == 1:
        return T * serial + resident
    # two threads, steady state per tile: with one reduction step a thread's whole
    # tile (loads, GEMM, ALU, store) overlaps the other's; with several, each step's
    # loads overlap the other thread's GEMM and the store delays the next reset. An
    # odd last tile has no partner to overlap with (one tile: no overlap at all).
    if R == 1:
        per_tile = max(g_step + e_tile, load + out + fetch * n_tile)
    else:
        per_tile = max(R * g_step, R * load + fetch * n_tile) + e_tile + out
    paired = T - T % t.vt
    fill = load if paired else 0.0     # the first loads, before any overlap
    return paired * per_tile + (T - paired) * serial + fill + resident


def _caps(cfg: VTAConfig) -> dict[str, int]:
    return {"inp": cfg.inp_depth, "wgt": cfg.wgt_depth, "acc": cfg.acc_depth,
            "uop": cfg.uop_depth // 4}


def fits(t: Tiling, s: Conv2dShape, cfg: VTAConfig, bias: int = 1) -> bool:
    """Whether every virtual thread's tiles of ``t`` fit its share of the buffers (resident
    weights: one WGT buffer shared by the threads)."""
    return _fits(t, s, bias, _caps(cfg))


def _fits(t: Tiling, s: Conv2dShape, bias: int, caps: dict[str, int]) -> bool:
    """``fits`` with the buffers' entries ``caps`` (``_caps``) computed once per search."""
    need, vt = t.buffers(s, bias), t.vt
    return (need["inp"] <= caps["inp"] // vt and need["acc"] <= caps["acc"] // vt
            and need["uop"] <= caps["uop"]
            and need["wgt"] <= (caps["wgt"] if t.wres else caps["wgt"] // vt))


def candidates(s: Conv2dShape, cfg: VTAConfig, bias: int = 1, vt: int = 2,
               dram: DramTiming | None = None, top: int = 1) -> list[Tiling]:
    """The ``top`` best-ranked tilings with ``vt`` virtual threads (with 1 if 2 fit nothing),
    best first. ``bias``: per-channel ACC vectors per channel block (``Tiling.buffers``).

    Raises:
        TilingError: not even the smallest tile fits; names the buffer.
    """
    return list(_ranked(s, cfg, int(bias), vt, dram or DramTiming(), top))


@functools.lru_cache(maxsize=256)
def _ranked(s: Conv2dShape, cfg: VTAConfig, bias: int, vt: int, dram: DramTiming,
            top: int) -> tuple[Tiling, ...]:
    """``candidates`` once per shape (a model's repeated layers search once)."""
    caps_all = _caps(cfg)
    for v in ([vt, 1] if vt > 1 else [1]):
        ranked = []
        for th, tw, toc, tic, tkh, wres in itertools.product(
                _cands(s.OH), _cands(s.OW), _cands(s.OB), _cands(s.CB), _cands(s.KH),
                (False, True)):
            t = Tiling(th, tw, toc, tic, tkh, v, wres)
            if _fits(t, s, bias, caps_all):
                ranked.append(((estimate(t, s, cfg, bias, dram), -th * tw * toc * tic * tkh), t))
        if ranked:
            ranked.sort(key=lambda p: p[0])
            return tuple(t for _, t in ranked[:top])
    need = Tiling(1, 1, 1, 1, 1, 1).buffers(s, bias)
    bad = [k for k in caps_all if need[k] > caps_all[k]]
    raise TilingError(f"no tiling of conv2d {s} fits {cfg.name}: even one pixel, one channel "
                      f"block and one kernel row need {need} entries; the {', '.join(bad)} "
                      f"buffer(s) hold {[caps_all[k] for k in bad]}")


def search(s: Conv2dShape, cfg: VTAConfig, bias: int = 1, vt: int = 2,
           dram: DramTiming | None = None) -> Tiling:
    """The best-ranked tiling (``candidates(...)[0]``)."""
    return candidates(s, cfg, bias, vt, dram, 1)[0]
