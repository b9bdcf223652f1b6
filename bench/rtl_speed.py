"""Speed of the Verilator model of the accelerator on a GEMM workload.

Workload: ``driver.examples.gemm.gemm_program`` (M x K by K x N int8 GEMM
with a requantizing shift) on the default 1x16 preset, run ``--reps`` times
back to back in one simulator invocation; its output is checked against
numpy. The simulator's fixed start-up cost (process launch, cocotb, reset),
measured on a FINISH-only program, is subtracted from the wall time.

Prints simulated cycles per wall second and the Verilator build time (the
last build of this model, from its ``build.json``; ``--fresh`` rebuilds it in
a temporary folder to measure), and ends with one line holding a JSON object
of the figures, names carrying units.

Usage: ``python bench/rtl_speed.py [--preset NAME] [--size M,N,K] [--reps N] [--fresh]``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from driver.examples.gemm import gemm_program, unpack  # noqa: E402
from driver.rtl import build_model, run_programs  # noqa: E402
from driver.rtl.build import build_seconds  # noqa: E402
from vta_hw.config import DEFAULT_PRESET, load_config  # noqa: E402
from vta_hw.isa import Finish  # noqa: E402
from vta_hw.program import DramLayout  # noqa: E402


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default=DEFAULT_PRESET)
    ap.add_argument("--size", default="128,128,128", help="M,N,K of the GEMM")
    ap.add_argument("--reps", type=int, default=3, help="runs of the GEMM in one invocation")
    ap.add_argument("--fresh", action="store_true", help="time a fresh Verilator build")
    args = ap.parse_args(argv)
    cfg = load_config(args.preset)
    m, n, k = (int(v) for v in args.size.split(","))

    if args.fresh:
        os.environ["VTA_RTL_BUILD_DIR"] = tempfile.mkdtemp(prefix="vta_rtl_bench_")
    t0 = time.monotonic()
    bdir = build_model(cfg)
    build_wall = time.monotonic() - t0
    build_s = build_seconds(bdir)

    program, expected = gemm_program(cfg, m, n, k)
    finish_only = DramLayout(cfg).finish([Finish()], [])
    t0 = time.monotonic()
    run_programs(cfg, [(finish_only, None)])
    startup = time.monotonic() - t0
    t0 = time.monotonic()
    results = run_programs(cfg, [(program, None)] * args.reps)
    wall = time.monotonic() - t0
    for r in results:
        if not np.array_equal(unpack(program.read(r.dram, "C")), expected):
            raise SystemExit("the RTL's GEMM result differs from numpy")
    cycles = sum(r.cycles for r in results)
    sim_s = max(wall - startup, 1e-9)
    figures = {
        "preset": cfg.name, "gemm_mnk": [m, n, k], "reps": args.reps,
        "cycles_per_run": results[0].cycles, "rtl_cycles_per_s": round(cycles / sim_s),
        "sim_wall_s": round(sim_s, 3), "startup_s": round(startup, 3),
        "build_s": build_s, "build_cached": build_wall < build_s / 2,
    }
    print(f"{cfg.name}: GEMM {m}x{n}x{k}, {args.reps} runs of {results[0].cycles} cycles "
          f"in {sim_s:.2f} s (start-up {startup:.2f} s excluded)")
    print(f"Verilator model: {figures['rtl_cycles_per_s']} simulated cycles per wall second")
    print(f"Verilator build: {build_s:.1f} s ({'cached' if figures['build_cached'] else 'built now'})")
    print(json.dumps(figures))
    return figures


if __name__ == "__main__":
    main()
