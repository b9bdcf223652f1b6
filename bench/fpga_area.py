"""Where the area of a board's SoC goes: Yosys cells per module (hierarchy kept).

Elaborates ``fpga.top.BoardTop`` for a board and preset (as ``fpga.build``
does), runs the family's Yosys synthesis with ``-noflatten`` (the same
options as the bitstream build otherwise) and prints, per module, its own
cells (submodules not included): LUTs (LUT4 on iCE40, LUT4 on ECP5), flip-flops,
carry cells, DSP blocks, block RAMs and (iCE40) SPRAMs, largest first, then the
totals. Keeping the hierarchy stops optimizations across module boundaries,
so the totals run higher than a flattened build's (``bench/fpga_fit.py``
gives those, with place and route); this is for finding the big items. The
last line of output is one JSON object of the rows.

Usage:

    python bench/fpga_area.py [--board icebreaker] [--preset P] [--out DIR]

Takes about 30 s for a small preset on iCE40 (Yosys from YoWASP, one core).
"""
from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fpga.boards import get_board  # noqa: E402
from fpga.build import ICE40_SYNTH, STEP_LIMIT_S, _prepare, find_tool  # noqa: E402
from vta_hw.config import load_config  # noqa: E402
from vta_hw.tool import ToolError, run_tool  # noqa: E402

#: Yosys cell types per column, by family.
COLUMNS = {
    "ice40": {"LUT": ("SB_LUT4",), "FF": ("SB_DFF",), "CARRY": ("SB_CARRY",),
              "DSP": ("SB_MAC16",), "BRAM": ("SB_RAM40_4K",), "SPRAM": ("SB_SPRAM256KA",)},
    "ecp5": {"LUT": ("LUT4",), "FF": ("TRELLIS_FF",), "CARRY": ("CCU2C",),
             "DSP": ("MULT18X18D",), "BRAM": ("DP16KD",), "SPRAM": ()},
}


def module_rows(stat: dict, family: str) -> list[dict]:
    """One row per module of a Yosys ``stat -json`` report: its own cells by column."""
    rows = []
    for name, mod in stat["modules"].items():
        cells = mod.get("num_cells_by_type", {})
        row = {"module": name.lstrip("\\")}
        for col, prefixes in COLUMNS[family].items():
            row[col] = sum(n for t, n in cells.items() if prefixes and t.startswith(prefixes))
        rows.append(row)
    return sorted(rows, key=lambda r: (-r["LUT"], -r["FF"], r["module"]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", default="icebreaker")
    ap.add_argument("--preset", default=None, help="[the board's smallest]")
    ap.add_argument("--out", default=None, help="work folder [build/fpga/area/<board>/<preset>]")
    a = ap.parse_args(argv)
    board = get_board(a.board)
    if board.family not in COLUMNS:
        raise SystemExit(f"{board.name}: no open flow for family {board.family}")
    cfg = load_config(a.preset or board.smallest)
    out = Path(a.out) if a.out else (Path(__file__).resolve().parents[1] / "build/fpga/area"
                                     / board.name / cfg.name)
    opts = dict(ICE40_SYNTH) if board.family == "ice40" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = _prepare(board, cfg, board.clock_mhz, name="top", **opts)
    out.mkdir(parents=True, exist_ok=True)
    plan.extract(out)
    synth = "synth_ice40 -dsp -spram" if board.family == "ice40" else "synth_ecp5"
    after_read = opts.get("script_after_read", "")
    (out / "area.ys").write_text(f"read_rtlil top.il\n{after_read}\n{synth} -noflatten -top top\n"
                                 "tee -q -o area.json stat -json\n")
    try:
        proc = run_tool([find_tool("yosys"), "-q", "-l", "area.log", "area.ys"], cwd=out,
                        timeout_s=STEP_LIMIT_S, what="synthesis (yosys)", capture_output=True,
                        text=True)
    except ToolError as e:
        raise SystemExit(f"{e}; see {out / 'area.log'}") from None
    if proc.returncode:
        raise SystemExit(f"yosys failed; see {out / 'area.log'}")
    rows = module_rows(json.loads((out / "area.json").read_text()), board.family)
    cols = list(COLUMNS[board.family])
    print(f"{board.name} / {cfg.name}: cells per module (own cells, hierarchy kept)")
    print(f"{'module':<44}" + "".join(f"{c:>7}" for c in cols))
    for r in rows:
        if any(r[c] for c in cols):
            print(f"{r['module'][:44]:<44}" + "".join(f"{r[c]:>7}" for c in cols))
    total = {c: sum(r[c] for r in rows) for c in cols}
    print(f"{'total':<44}" + "".join(f"{total[c]:>7}" for c in cols))
    print(json.dumps({"board": board.name, "preset": cfg.name, "rows": rows, "total": total}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
