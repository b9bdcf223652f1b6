"""Which presets fit which boards: resources, Fmax and peak GOPS per (preset, board).

For every (board, preset) pair asked for, runs the open-flow build
(``fpga.build.build``: Yosys + nextpnr from YoWASP) at the board's default
clock (or ``--clock``) and prints one table row: LUTs, FFs, DSPs, block RAMs
(used / device total), Fmax after routing (MHz), timing met at the clock,
peak GOPS at the clock and at Fmax (2 x MACs x f), build seconds. A pair that
does not fit prints the resource that overflowed. Then, per board, the
largest preset that fit with timing met. The last line of output is one JSON
object of all figures, units in the names.

Boards without an open flow (PYNQ-Z1, Vivado) are skipped.

A 1x8 build on ULX3S-85F takes several minutes on a 2-core machine; the
default runs only the smallest preset per board. Usage:

    python bench/fpga_fit.py [--boards ulx3s-85f,icebreaker] [--presets P1,P2|all]
                             [--clock MHZ] [--out DIR]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fpga.boards import BOARDS  # noqa: E402
from fpga.build import FpgaBuildError, build  # noqa: E402
from vta_hw.config import load_config, preset_names  # noqa: E402


def by_size(names):
    return sorted(names, key=lambda n: (load_config(n).macs_per_cycle, n))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boards", default=",".join(b for b, v in BOARDS.items() if v.open_flow))
    ap.add_argument("--presets", default="smallest",
                    help="comma-separated presets, 'all', or 'smallest' (per board) [smallest]")
    ap.add_argument("--clock", type=float, default=None, help="MHz [board default]")
    ap.add_argument("--out", default=None, help="build root [build/fpga/bench]")
    a = ap.parse_args(argv)
    root = Path(a.out) if a.out else Path(__file__).resolve().parents[1] / "build/fpga/bench"
    rows, largest = [], {}
    hdr = (f"{'board':<11} {'preset':<31} {'LUT':>13} {'FF':>13} {'DSP':>8} {'BRAM':>8} "
           f"{'Fmax':>7} {'clk':>5} {'met':>3} {'GOPS':>6} {'GOPS@Fmax':>9} {'build_s':>7}")
    print(hdr)
    for bname in a.boards.split(","):
        board = BOARDS[bname]
        if not board.open_flow:
            continue
        if a.presets == "all":
            presets = by_size(preset_names())
        elif a.presets == "smallest":
            presets = [board.smallest]
        else:
            presets = a.presets.split(",")
        for p in presets:
            t0 = time.monotonic()
            clock = a.clock or board.clock_mhz
            try:
                rep = build(bname, p, clock, root / bname / p, log=lambda s: None)
                err = None
            except FpgaBuildError as e:
                rep, err = None, str(e)
            wall = round(time.monotonic() - t0, 1)
            if rep is None:
                print(f"{bname:<11} {p:<31} does not build: {err.splitlines()[0][:110]}")
                rows.append({"board": bname, "preset": p, "fits": False, "error": err,
                             "build_s": wall})
                continue
            r = rep["resources"]
            cell = {k: f"{v['used']}/{v['total']}" for k, v in r.items()}
            print(f"{bname:<11} {p:<31} {cell['LUT']:>13} {cell['FF']:>13} {cell['DSP']:>8} "
                  f"{cell['BRAM']:>8} {rep['fmax_mhz'] or 0:>7.1f} {clock:>5g} "
                  f"{'yes' if rep['timing_met'] else 'no':>3} {rep['peak_gops']:>6.2f} "
                  f"{rep['peak_gops_at_fmax'] or 0:>9.2f} {wall:>7}")
            rows.append({"board": bname, "preset": p, "fits": rep["fits"],
                         "timing_met": rep["timing_met"], "clock_mhz": clock,
                         "fmax_mhz": rep["fmax_mhz"], "peak_gops": rep["peak_gops"],
                         "peak_gops_at_fmax": rep["peak_gops_at_fmax"],
                         **{f"{k.lower()}_used": v["used"] for k, v in r.items()},
                         **{f"{k.lower()}_total": v["total"] for k, v in r.items()},
                         "build_s": wall})
            if rep["fits"] and rep["timing_met"]:
                prev = largest.get(bname)
                if prev is None or load_config(p).macs_per_cycle >= load_config(prev).macs_per_cycle:
                    largest[bname] = p
    for bname in a.boards.split(","):
        if BOARDS[bname].open_flow:
            print(f"largest preset that fits {bname} with timing met: {largest.get(bname, '(none)')}")
    print(json.dumps({"rows": rows, "largest_fitting": largest}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
