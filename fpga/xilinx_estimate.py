"""Xilinx resource estimates without Vivado: Yosys ``synth_xilinx`` cell counts per part.

``estimate(part, preset)`` synthesizes the SoC (``fpga.soc.SoC``: accelerator, its
block RAM as DRAM, UART bridge) with the PYNQ-Z1's SoC parameters (256 KiB memory,
50 MHz) using Yosys's ``synth_xilinx -flatten -family xc7|xcup`` (the same
``_dup`` registers kept as in ``fpga.build``, the SoC memory marked for block RAM:
``MEMORY_IN_BRAM``), reads ``stat -json`` and counts, against the part's totals:

    LUT     LUT1..LUT6, plus LUTs used as memory (RAM32M/RAM64M: 4 each, RAM32X1D/
            RAM64X1D: 2, SRL16E/SRLC32E: 1, ...: ``CELLS``), also given alone as ``LUTRAM``
    FF      FDRE, FDSE, FDCE, FDPE
    DSP     DSP48E1 (7-series) or DSP48E2 (UltraScale+)
    BRAM36  RAMB36E1/E2, and RAMB18E1/E2 as half a RAMB36 each

These are Yosys's counts before any place and route: Vivado's own synthesis and
packing will differ (not measured here: no Vivado), and no Fmax comes with them. Every printout carries ``LABEL``; nothing here is a Vivado
result. Totals come from AMD's product tables (see ``PARTS``).

Results are cached per (preset, family) in ``build/fpga/xilinx/<family>/<preset>/
estimate.json`` with the SHA-256 of the Yosys script and the elaborated RTLIL:
``estimate`` re-synthesizes only when either changed (or ``refresh``); ``cached()``
reads the cache without elaborating, for ``vta fpga list``. One ``xc7`` synthesis
serves every 7-series part, one ``xcup`` both UltraScale+ parts.

Errors (``XilinxEstimateError``): an unknown part (lists the parts), a missing Yosys
(names the pip package), a Yosys run that fails (names its log) or runs past
``fpga.build.STEP_LIMIT_S`` (names the limit and how to raise it).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import time
import warnings
from pathlib import Path

from vta_hw.config import load_config
from vta_hw.errors import VtaError
from vta_hw.tool import ToolError, run_tool

LABEL = "Yosys synth_xilinx estimate (no Vivado place & route)"


@dataclasses.dataclass(frozen=True)
class Part:
    name: str       # AMD part name without package and speed grade
    family: str     # synth_xilinx -family
    boards: str     # the boards that carry it
    totals: dict    # {"LUT", "FF", "DSP", "BRAM36"}: the part's totals


# Totals from AMD's product tables: the Zynq-7000 SoC Data Sheet: Overview (DS190; Z-7020:
# 53,200 LUTs, 106,400 flip-flops, 140 36 Kb block RAMs, 220 DSP slices) and the Zynq
# UltraScale+ MPSoC Data Sheet: Overview (DS891; ZU3EG / ZU7EV: 70,560 / 230,400 CLB LUTs,
# 141,120 / 460,800 CLB flip-flops, 216 / 312 36 Kb block RAMs, 360 / 1,728 DSP slices).
# The project's search tool found the xc7z020 row again in a device list
# (http://331126.vm6qvof6.asia/fpga/gadgets.html: "XC7Z020 ... 53200 6-lut, 140 bram,
# 220 dsp") and a GitHub answer ("Zynq 7020 PL is relatively small, 53,200 LUTs",
# eugene-tarassov/vivado-risc-v#196), but no copy of the UltraScale+ table: those two rows
# are as recalled from DS891, not re-checked here.
PARTS = {p.name: p for p in (
    Part("xc7z020", "xc7", "PYNQ-Z1, PYNQ-Z2",
         {"LUT": 53_200, "FF": 106_400, "DSP": 220, "BRAM36": 140}),
    Part("xczu3eg", "xcup", "Ultra96",
         {"LUT": 70_560, "FF": 141_120, "DSP": 360, "BRAM36": 216}),
    Part("xczu7ev", "xcup", "ZCU104",
         {"LUT": 230_400, "FF": 460_800, "DSP": 1_728, "BRAM36": 312}),
)}

#: Yosys cell type -> (resource, how many of it one cell takes). LUT-as-memory weights are
#: the LUTs each primitive occupies in a SLICEM (UG474 / UG574).
_LUTRAM = {"RAM32M": 4, "RAM64M": 4, "RAM32M16": 8, "RAM64M8": 8, "RAM32X1D": 2,
           "RAM64X1D": 2, "RAM128X1D": 4, "RAM32X1S": 1, "RAM64X1S": 1, "RAM128X1S": 2,
           "RAM256X1S": 4, "SRL16E": 1, "SRLC32E": 1}
CELLS = {
    **{f"LUT{k}": ("LUT", 1) for k in range(1, 7)},
    **{t: ("LUTRAM", n) for t, n in _LUTRAM.items()},
    **{t: ("FF", 1) for t in ("FDRE", "FDSE", "FDCE", "FDPE")},
    "DSP48E1": ("DSP", 1), "DSP48E2": ("DSP", 1),
    "RAMB36E1": ("BRAM36", 1), "RAMB36E2": ("BRAM36", 1),
    "RAMB18E1": ("BRAM36", 0.5), "RAMB18E2": ("BRAM36", 0.5),
}
#: the board whose SoC parameters (memory size, clock) the estimate synthesizes
SOC_BOARD = "pynq-z1"
#: The SoC's memory (``fpga.memory``, standing in for DRAM) in block RAM, as on every board:
#: for ``xcup`` Yosys 0.70's memory mapping otherwise picks LUT RAM for its 256 KiB and then
#: fails ("lutrams_xc5v_map.v:181: invalid OPTION_ABITS/WIDTH combination"); ``xc7`` picks
#: block RAM either way.
MEMORY_IN_BRAM = 'setattr -set ram_style "block" soc.ram/m:*'


def yosys_script(family: str) -> str:
    """The Yosys commands of an estimate for ``family`` (``xc7``, ``xcup``) on ``soc.il``."""
    from fpga.build import KEEP_DUPLICATES
    return (f"read_rtlil soc.il; {MEMORY_IN_BRAM}; {KEEP_DUPLICATES}; synth_xilinx -flatten "
            f"-family {family} -top soc; tee -q -o stat.json stat -json")
CACHE_DIR = Path(__file__).resolve().parents[1] / "build" / "fpga" / "xilinx"


class XilinxEstimateError(VtaError, RuntimeError):
    """An estimate could not be made; the message names the part, tool or log and the fix."""


def get_part(name: str) -> Part:
    try:
        return PARTS[name.lower()]
    except KeyError:
        names = ", ".join(f"{p.name} ({p.boards})" for p in PARTS.values())
        raise XilinxEstimateError(f"no Xilinx part named {name!r}; parts: {names}") from None


def count_cells(stat: dict) -> dict:
    """``{"LUT", "LUTRAM", "FF", "DSP", "BRAM36"}`` from Yosys ``stat -json`` (the flattened
    design's ``design`` totals); ``LUT`` includes the LUTs in ``LUTRAM``, ``BRAM36`` counts
    a RAMB18 as 0.5."""
    cells = (stat.get("design") or {}).get("num_cells_by_type", {})
    out = {"LUT": 0, "LUTRAM": 0, "FF": 0, "DSP": 0, "BRAM36": 0}
    for cell_type, n in cells.items():
        if cell_type in CELLS:
            res, weight = CELLS[cell_type]
            out[res] += n * weight
    out["LUT"] += out["LUTRAM"]
    return out


def against(part: Part, counts: dict, preset: str) -> dict:
    """The estimate of ``preset`` on ``part``: resources {used, total, percent}, fits."""
    res = {k: {"used": counts[k], "total": total, "percent": round(100 * counts[k] / total, 1)}
           for k, total in part.totals.items()}
    overflow = [k for k, v in res.items() if v["used"] > v["total"]]
    return {"label": LABEL, "part": part.name, "boards": part.boards, "family": part.family,
            "preset": preset, "resources": res, "lutram": counts["LUTRAM"],
            "fits": not overflow, "overflow": overflow}


def _soc_rtlil(cfg) -> str:
    from amaranth.back import rtlil

    from fpga.boards import get_board
    from fpga.protocol import DEFAULT_BAUD, divisor_for
    from fpga.soc import SoC
    board = get_board(SOC_BOARD)
    clk_hz = board.clock_mhz * 1e6
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        soc = SoC(cfg, mem_bytes=board.mem_bytes, clk_hz=int(clk_hz),
                  divisor=divisor_for(clk_hz, DEFAULT_BAUD), params=board.rtl_params)
        return rtlil.convert(soc, name="soc", emit_src=False)   # no paths: one hash anywhere


def _synthesize(family: str, work: Path, log) -> dict:
    """Run ``synth_xilinx`` on ``work/soc.il``; Yosys's ``stat -json`` as a dict."""
    from fpga.build import STEP_LIMIT_S, FpgaBuildError, find_tool
    try:
        yosys = find_tool("yosys")
    except FpgaBuildError as e:
        raise XilinxEstimateError(str(e)) from None
    (work / "stat.json").unlink(missing_ok=True)
    log(f"  synth_xilinx -family {family} (Yosys) in {work} ...")
    try:
        proc = run_tool([yosys, "-q", "-l", "yosys.log", "-p", yosys_script(family)],
                        timeout_s=STEP_LIMIT_S,
                        what=f"synth_xilinx -family {family} (yosys)", cwd=work,
                        capture_output=True, text=True)
    except ToolError as e:
        raise XilinxEstimateError(f"{e}; its log so far: {work / 'yosys.log'}") from None
    if proc.returncode or not (work / "stat.json").exists():
        raise XilinxEstimateError(f"yosys synth_xilinx failed (exit {proc.returncode}); see "
                                  f"{work / 'yosys.log'}:\n{(proc.stdout + proc.stderr)[-2000:]}")
    return json.loads((work / "stat.json").read_text())


def estimate(part_name: str, preset: str, *, refresh: bool = False, cache_dir: Path | None = None,
             log=print) -> dict:
    """Resources of ``preset``'s SoC on ``part_name`` (``against``'s dict, plus ``cached``:
    whether the counts came from the cache, and ``synth_s``: seconds of the synthesis).

    Raises:
        XilinxEstimateError: see the module docstring.
        ValueError: an unknown preset (``vta_hw.config.load_config``).
    """
    part = get_part(part_name)
    cfg = load_config(preset)
    text = _soc_rtlil(cfg)
    digest = hashlib.sha256((yosys_script(part.family) + "\n" + text).encode()).hexdigest()
    work = (cache_dir or CACHE_DIR) / part.family / cfg.name
    entry_path = work / "estimate.json"
    entry = json.loads(entry_path.read_text()) if entry_path.exists() else None
    cached = not refresh and entry is not None and entry.get("sha256") == digest
    if not cached:
        work.mkdir(parents=True, exist_ok=True)
        (work / "soc.il").write_text(text)
        t0 = time.monotonic()
        stat = _synthesize(part.family, work, log)
        entry = {"preset": cfg.name, "family": part.family, "sha256": digest,
                 "yosys": stat.get("creator", ""), "counts": count_cells(stat),
                 "synth_s": round(time.monotonic() - t0, 1)}
        entry_path.write_text(json.dumps(entry, indent=1))
    return {**against(part, entry["counts"], cfg.name), "cached": cached,
            "synth_s": entry["synth_s"]}


def cached(cache_dir: Path | None = None) -> list[dict]:
    """Every cached estimate against every part of its family (``against``'s dicts), by part
    then preset; read from the cache only (no elaboration: the RTL may have changed since)."""
    rows = []
    for entry_path in sorted((cache_dir or CACHE_DIR).glob("*/*/estimate.json")):
        entry = json.loads(entry_path.read_text())
        rows += [against(p, entry["counts"], entry["preset"])
                 for p in PARTS.values() if p.family == entry["family"]]
    return sorted(rows, key=lambda r: (list(PARTS).index(r["part"]), r["preset"]))


def table(rows: list[dict]) -> str:
    """``rows`` (``against``'s dicts) as a text table under ``LABEL``."""
    lines = [LABEL + ":",
             f"  {'part':<8} {'boards':<17} {'preset':<34} {'LUT':>12} {'FF':>12} {'DSP':>9} "
             f"{'BRAM36':>10}  fits"]
    for r in rows:
        cols = " ".join(f"{_num(v['used']) + ' ' + format(v['percent'], '.0f') + '%':>{w}}"
                        for (k, v), w in zip(r["resources"].items(), (12, 12, 9, 10)))
        fits = "yes" if r["fits"] else "NO: " + ", ".join(r["overflow"])
        lines.append(f"  {r['part']:<8} {r['boards']:<17} {r['preset']:<34} {cols}  {fits}")
    return "\n".join(lines)


def _num(x: float) -> str:
    return f"{x:,.1f}" if x != int(x) else f"{int(x):,}"
