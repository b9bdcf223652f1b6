"""Conv2d problem shapes on packed layouts, and the tile search for the accelerator.

A ``Tiling`` picks, per output tile, ``th`` x ``tw`` output pixels of ``toc``
output-channel blocks, accumulated over reduction steps of ``tic``
input-channel blocks x ``tkh`` kernel rows, with ``vt`` virtual threads (each
owns 1/vt of every SRAM). ``search`` enumerates candidates that fit the
buffers of the config and ranks them by an estimate of cycles: the compute
module's GEMM uops, its epilogue uops and the fixed cost of each of its
instructions (decode and pipeline depth, ``vta_hw.timing``) and ACC vector loads,
against the load and store modules' DMAs at the DRAM latency and bandwidth,
overlapped as the virtual threads allow. The smallest
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


def _dma_cycles(rows: int, row_bytes: int, cfg: VTAConfig, dram: DramTiming) -> float:
    """Cycles of a 2-D DMA: per row, bursts of at most ``max_burst_beats`` beats, each
    paying the DRAM latency (the port serves one burst at a time)."""
    burst = dram.max_burst_beats * cfg.bus_bytes
    bursts = -(-row_bytes // burst)
    beats = -(-row_bytes // cfg.bus_bytes)
    return rows * (2 + bursts * (dram.latency + 1) + beats * dram.beat_interval(cfg.bus_bytes))


def epilogue_passes(bias: int) -> int:
    """Compute uops per output element besides the GEMMs (``conv2d.fused_epilogue``): with
    the bias as the only ACC vector (``bias == 1``) one REQUANT (the GEMM reset runs once
    per thread, not per tile: REQUANT leaves zeros); otherwise the GEMM reset, ADD bias,
    SHR, MAX and MIN (5; the multiplier's passes are not counted)."""
    return 1 if bias == 1 else 5


#: Cycles a GEMM or ALU instruction holds the compute module beyond its uops
#: (``vta_hw.timing``): decode, the pipeline's drain to RETIRE, and the cycle back in IDLE.
INSN_OVERHEAD = timing.INSN_DECODE_CYCLES + timing.GEMM_PIPELINE_DEPTH + 1


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
    vec = int(bias) * (INSN_OVERHEAD + _dma_cycles(1, t.toc * cfg.acc_elem_bytes, cfg, dram))
    return {"steps": steps * INSN_OVERHEAD,
            "epilogue": epilogue_passes(bias) * INSN_OVERHEAD, "vectors": vec}


def _wgt_dma(t: Tiling, s: Conv2dShape, cfg: VTAConfig, dram: DramTiming) -> float:
    """Cycles of one reduction step's weight loads: per output-channel block ``tic`` rows
    of ``tkh * KW`` elements, one row when they are contiguous in DRAM (all kernel rows),
    and one row for the whole tile when all input channels are in the step too (the code
    generator merges contiguous rows into one DMA row)."""
    row = t.tkh * s.KW * cfg.wgt_elem_bytes
    if t.tkh < s.KH:
        return t.toc * _dma_cycles(t.tic, row, cfg, dram)
    if t.tic < s.CB:
        return t.toc * _dma_cycles(1, t.tic * row, cfg, dram)
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
    inp = t.tic * _dma_cycles(t.rows_in(s), t.cols_in(s) * cfg.inp_elem_bytes, cfg, dram)
    wgt = _wgt_dma(t, s, cfg, dram)
    out = t.toc * _dma_cycles(t.th, t.tw * cfg.out_elem_bytes, cfg, dram)
    resident = 0.0
    if t.wres:  # weights once per channel tile, not overlapped; none per step
        resident = _ceil(s.OB, t.toc) * _dma_cycles(
            1, t.toc * s.CB * s.KH * s.KW * cfg.wgt_elem_bytes, cfg, dram)
        wgt = 0.0
    g_step = gemm / (T * R) + over["steps"] / R
    serial = R * (g_step + inp + wgt) + e_tile + out
    if t.vt == 1:
        return T * serial + resident
    # two threads, steady state per tile: with one reduction step a thread's whole
    # tile (loads, GEMM, ALU, store) overlaps the other's; with several, each step's
    # loads overlap the other thread's GEMM and the store delays the next reset. An
    # odd last tile has no partner to overlap with (one tile: no overlap at all).
    if R == 1:
        per_tile = max(g_step + e_tile, inp + wgt + out)
    else:
        per_tile = R * max(g_step, inp + wgt) + e_tile + out
    paired = T - T % t.vt
    fill = inp + wgt if paired else 0.0     # the first loads, before any overlap
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
