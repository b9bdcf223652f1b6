"""Speed of the cycle simulator against the Verilator RTL on one realistic workload.

Workload: ResNet-18's 3x3 convolution of stage 2 (56x56, 64 -> 64 channels,
pad 1, int8, right shift 8, no bias), as the compiler
(``compiler.topi.vta.conv2d_program``) builds it for the preset (its tile
search, two virtual threads).

Both simulators run the same program in the same invocation:

- the cycle model (``sim.cycle.run``, values included, so it produces the
  output tensor, which is checked against numpy), and its timing-only mode,
  each the fastest of ``--repeat`` runs;
- the RTL (``driver.rtl.run_programs``: Verilator + cocotb). Its fixed
  start-up cost (simulator launch, measured on a FINISH-only program) is
  subtracted; the Verilator build is cached and not timed.

Both must report the same cycle count. Prints simulated cycles per wall
second for each, their ratio, and peak memory (resident set, MiB), and ends
with one line holding a JSON object of the figures (units in the names).

Usage: ``python bench/sim_speed.py [--preset NAME] [--repeat N] [--skip-rtl]``.
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from sim import cycle  # noqa: E402
from compiler.topi.vta import conv2d_program  # noqa: E402
from vta_hw.config import load_config  # noqa: E402
from vta_hw.isa import Finish  # noqa: E402
from vta_hw.program import DramLayout  # noqa: E402


def _peak_rss_mib(who=resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # Linux: KiB


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default=None, help="config preset (default: the default preset)")
    ap.add_argument("--repeat", type=int, default=3,
                    help="cycle-model runs; the fastest counts (the RTL runs once)")
    ap.add_argument("--skip-rtl", action="store_true", help="time the cycle model only")
    args = ap.parse_args(argv)

    cfg = load_config(args.preset)
    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (1, 64, 56, 56)).astype(np.int8)
    w = rng.integers(-128, 128, (64, 64, 3, 3)).astype(np.int8)
    kernel = conv2d_program(cfg, x.shape, w.shape, 1, 1, shift=8, bias=False)
    prog, image = kernel.program, kernel.program.dram_image(kernel.inputs(x, w))
    expected = kernel.reference(x, w)
    gen_s = time.perf_counter() - t0
    print(f"workload: ResNet-18 conv 56x56x64 -> 64, 3x3, pad 1 on {cfg.name}: "
          f"{len(prog.insns)} instructions, {len(prog.uops)} uops (generated in {gen_s:.2f} s)")

    def best_of(n: int, **kw):
        best = None
        for _ in range(n):
            t0 = time.perf_counter()
            r = cycle.run(prog, image, **kw)
            dt = time.perf_counter() - t0
            best = dt if best is None else min(best, dt)
        return r, best

    res, sim_s = best_of(args.repeat)
    ok = bool(np.array_equal(kernel.unpack(prog.read(res.dram, "out")), expected))
    timing_only, timing_s = best_of(args.repeat, values=False)
    assert timing_only.cycles == res.cycles
    peak = _peak_rss_mib()
    print(f"cycle model: {res.cycles} cycles in {sim_s:.3f} s "
          f"({res.cycles / sim_s:.3g} cycles/s; timing only {timing_s:.3f} s, "
          f"{res.cycles / timing_s:.3g} cycles/s); output {'matches' if ok else 'DIFFERS FROM'} "
          f"numpy; GEMM utilization {100 * res.gemm_utilization:.1f} %; peak RSS {peak:.0f} MiB")

    figures = {"workload": "resnet18_conv3x3_56x56x64", "config": cfg.name,
               "cycles": res.cycles, "cycle_sim_wall_s": round(sim_s, 4),
               "cycle_sim_cycles_per_s": round(res.cycles / sim_s),
               "cycle_sim_timing_only_cycles_per_s": round(res.cycles / timing_s),
               "gemm_utilization": round(res.gemm_utilization, 4),
               "output_matches_numpy": ok, "peak_rss_mib": round(peak, 1)}
    if not args.skip_rtl:
        from driver.rtl import run_programs
        lay = DramLayout(cfg)
        empty = lay.finish([Finish()], [])
        run_programs(cfg, [(empty, None)])  # builds (or reuses) the model, untimed
        base = run_programs(cfg, [(empty, None)])[0].wall_s
        rtl = run_programs(cfg, [(prog, image)])[0]
        rtl_s = max(rtl.wall_s - base, 1e-9)
        rtl_rate = rtl.cycles / rtl_s
        speedup = (res.cycles / sim_s) / rtl_rate
        print(f"RTL (Verilator + cocotb): {rtl.cycles} cycles in {rtl.wall_s:.1f} s "
              f"(start-up {base:.1f} s subtracted: {rtl_rate:.3g} cycles/s); "
              f"cycle counts {'equal' if rtl.cycles == res.cycles else 'DIFFER'}")
        print(f"speedup of the cycle model over the RTL: {speedup:.1f}x; RTL simulator "
              f"peak RSS {_peak_rss_mib(resource.RUSAGE_CHILDREN):.0f} MiB")
        figures.update({"rtl_cycles": rtl.cycles, "rtl_wall_s": round(rtl.wall_s, 2),
                        "rtl_startup_s": round(base, 2),
                        "rtl_cycles_per_s": round(rtl_rate),
                        "speedup_vs_rtl": round(speedup, 1),
                        "cycles_equal": rtl.cycles == res.cycles,
                        "rtl_peak_rss_mib": round(_peak_rss_mib(resource.RUSAGE_CHILDREN), 1)})
    print(json.dumps(figures))
    return figures


if __name__ == "__main__":
    main()
