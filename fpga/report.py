"""The build report: resources against the device's totals, Fmax, pass/fail, fit.

``make_report`` reads nextpnr's ``--report`` JSON (utilization per cell
type, achieved and constrained frequency per clock) and Yosys's ``stat
-json`` (flip-flop count) and returns a plain dict, written as
``<build dir>/report.json``:

    board, preset, family, device, clock_mhz (requested),
    resources: {LUT|FF|DSP|BRAM: {used, total, percent}} (iCE40 also SPRAM: the
        UltraPlus's 16 K x 16-bit single-port RAMs, which hold the SoC's memory),
    fmax_mhz (the SoC clock's, after routing), timing_met (fmax >= clock),
    fits (every resource within its total), overflow (names of those that are not),
    critical_path (the SoC clock's slowest path in words, ``fpga.critical_path``; None
        when nextpnr gave none),
    peak_gops (2 x MACs x clock, GOPS), build_s (seconds per step)
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from fpga.critical_path import describe

#: nextpnr cell types per report resource.
CELL_TYPES = {
    "ecp5": {"LUT": ("TRELLIS_COMB",), "FF": ("TRELLIS_FF",), "DSP": ("MULT18X18D",),
             "BRAM": ("DP16KD",)},
    "ice40": {"LUT": ("ICESTORM_LC",), "FF": (), "DSP": ("ICESTORM_DSP",),
              "BRAM": ("ICESTORM_RAM",), "SPRAM": ("ICESTORM_SPRAM",)},
}
#: Yosys cell-name prefixes that are flip-flops.
FF_PREFIXES = ("TRELLIS_FF", "SB_DFF", "FD")


def yosys_ff_count(stat_json: Path) -> int:
    """Flip-flops in the top module's ``stat -json`` (hierarchy flattened)."""
    d = json.loads(Path(stat_json).read_text())
    mods = d.get("modules", {})
    top = d.get("design") or next(iter(mods.values()), {})
    cells = top.get("num_cells_by_type", {})
    return sum(n for t, n in cells.items() if t.startswith(FF_PREFIXES))


def clock_fmax(nextpnr_report: dict, clock_mhz: float) -> tuple[float | None, str | None]:
    """``(fmax_mhz, clock name)`` of the constrained clock nearest ``clock_mhz``."""
    best = None
    for name, f in nextpnr_report.get("fmax", {}).items():
        c = f.get("constraint")
        if c is None:
            continue
        key = abs(c - clock_mhz)
        if best is None or key < best[0] or (key == best[0] and f["achieved"] < best[1]):
            best = (key, f["achieved"], name)
    return (best[1], best[2]) if best else (None, None)


_UTIL_LINE = re.compile(r"^Info:\s+(\w+):\s+(\d+)/\s*(\d+)\s+\d+%", re.M)


def utilisation_from_log(log_text: str) -> dict:
    """nextpnr's "Device utilisation" lines as ``{cell type: {used, available}}`` (the last
    listing wins); what a failed placement leaves when there is no ``--report``."""
    out = {}
    for t, used, avail in _UTIL_LINE.findall(log_text):
        out[t] = {"used": int(used), "available": int(avail)}
    return out


def make_report(*, board, cfg, clock_mhz: float, nextpnr_json: Path, stat_json: Path | None,
                build_s: dict, nextpnr_log: Path | None = None) -> dict:
    if Path(nextpnr_json).exists():
        npr = json.loads(Path(nextpnr_json).read_text())
    else:
        npr = {"utilization": utilisation_from_log(Path(nextpnr_log).read_text()
                                                   if nextpnr_log and Path(nextpnr_log).exists()
                                                   else "")}
    util = npr.get("utilization", {})
    res = {}
    for key, types in CELL_TYPES[board.family].items():
        used = sum(util.get(t, {}).get("used", 0) for t in types)
        total = sum(util.get(t, {}).get("available", 0) for t in types) or board.totals[key]
        if key == "FF" and not types:
            used = yosys_ff_count(stat_json) if stat_json and Path(stat_json).exists() else 0
            total = board.totals["FF"]
        res[key] = {"used": used, "total": total, "percent": round(100 * used / total, 1)}
    fmax, clk_name = clock_fmax(npr, clock_mhz)
    overflow = [k for k, v in res.items() if v["used"] > v["total"]]
    return {"board": board.name, "preset": cfg.name, "family": board.family,
            "device": board.device, "clock_mhz": clock_mhz, "resources": res,
            "fmax_mhz": None if fmax is None else round(fmax, 2), "clock_net": clk_name,
            "critical_path": describe(npr, clk_name),
            "timing_met": fmax is not None and fmax >= clock_mhz,
            "fits": not overflow, "overflow": overflow, "macs": cfg.macs_per_cycle,
            "peak_gops": round(2 * cfg.macs_per_cycle * clock_mhz / 1e3, 3),
            "peak_gops_at_fmax": None if fmax is None else
            round(2 * cfg.macs_per_cycle * fmax / 1e3, 3),
            "build_s": build_s}


def summary(rep: dict) -> str:
    """One readable paragraph of a report."""
    lines = [f"{rep['board']} / {rep['preset']} at {rep['clock_mhz']:g} MHz:"]
    for k, v in rep["resources"].items():
        lines.append(f"  {k:<5} {v['used']:>7} / {v['total']:<7} {v['percent']:5.1f} %")
    fm = rep["fmax_mhz"]
    lines.append(f"  Fmax {fm if fm is not None else '?'} MHz: timing "
                 f"{'met' if rep['timing_met'] else 'NOT met'} at {rep['clock_mhz']:g} MHz; "
                 f"peak {rep['peak_gops']} GOPS ({rep['macs']} MACs)")
    if rep.get("critical_path"):
        lines.append(f"  slowest path: {rep['critical_path']['text']}")
    for s in rep.get("seeds", ()):
        lines.append(f"  seed {s['seed']}: " + (f"{s['fmax_mhz']:g} MHz" if s["error"] is None
                                                  else f"failed: {s['error']}")
                     + ("  (kept)" if s["seed"] == rep.get("seed") else ""))
    return "\n".join(lines)
