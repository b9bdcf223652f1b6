"""Compile time of ResNet-18 on the accelerator, per preset: does it grow with the instructions?

Builds the seeded ResNet-18 (``tests/models/builders.py``) at ``--size`` (default 224),
quantizes it once (two seeded calibration inputs), then, per preset, partitions it and
compiles every accelerator node (``compiler.quant.build_plan``, two virtual threads, the
tile search ranked against the DRAM model, no measuring), the library route's whole
compile. For each preset: the instructions and uops of all programs, the compile's wall
and CPU seconds, and instructions per CPU second. The reference is the default preset,
measured in the same run: ``ips_vs_default`` is a preset's instructions per CPU second
over the default's, near 1 when the compiler's time grows linearly with the
instructions it emits (small presets emit many more, smaller instructions). CPU
seconds are the process's (``time.process_time``), less noisy than wall time on a
shared machine.

Bars (issue 18): ResNet-18 at 224x224 compiles in <= 60 s on the default, 1x8 and
``1x4_i8w8a32_10_10_10_11_bus32`` presets and in <= 600 s on
``1x4_i8w8a32_8_8_8_9_bus32``; the 1x1 preset (``--presets`` may add
``1x1_i8w8a32_10_9_9_11_bus8_cq0``) is reported without a bar.

Prints one line per preset, then one JSON line of the figures (units in the names).

Usage: ``python bench/compile_time.py [--size 224] [--presets a,b,...]``.
"""
from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from compiler.frontend.onnx import from_onnx  # noqa: E402
from compiler.quant import build_plan, quantize  # noqa: E402
from vta_hw.config import DEFAULT_PRESET, load_config  # noqa: E402

#: preset -> bar on the compile's wall seconds (None: reported only)
BARS_S = {DEFAULT_PRESET: 60.0, "1x8_i8w8a32_11_12_13_14": 60.0,
          "1x4_i8w8a32_10_10_10_11_bus32": 60.0, "1x4_i8w8a32_8_8_8_9_bus32": 600.0}


def compile_preset(qg, preset: str) -> dict:
    """The figures of one preset's compile of ``qg`` (module docstring)."""
    cfg = load_config(preset)
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    plan = build_plan(qg, cfg, vthreads=2)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    insns = sum(len(p.insns) for p in plan.programs.values())
    uops = sum(len(p.uops) for p in plan.programs.values())
    return {"preset": cfg.name, "programs": len(plan.programs), "insns": insns, "uops": uops,
            "compile_wall_s": round(wall, 2), "compile_cpu_s": round(cpu, 2),
            "insns_per_cpu_s": round(insns / max(cpu, 1e-9), 1),
            "bar_wall_s": BARS_S.get(cfg.name)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=224, help="image height and width, pixels")
    ap.add_argument("--presets", default=",".join(BARS_S),
                    help="comma-separated presets; the default preset is always measured first")
    a = ap.parse_args(argv)
    from tests.models.builders import build_resnet18
    presets = [DEFAULT_PRESET] + [p for p in a.presets.split(",") if p and p != DEFAULT_PRESET]
    shape = (1, 3, a.size, a.size)
    graph, params = from_onnx(build_resnet18(size=a.size, seed=0), input_shapes={"input": shape})
    rng = np.random.default_rng(0)
    qg = quantize(graph, params, {"input": rng.standard_normal((2,) + shape[1:])})
    print(f"ResNet-18 {a.size}x{a.size}, build_plan per preset (2 virtual threads)")
    print(f"{'preset':<34} {'insns':>10} {'uops':>8} {'wall s':>8} {'cpu s':>8} "
          f"{'insns/cpu s':>12} {'bar s':>6}")
    rows = []
    for preset in presets:
        r = compile_preset(qg, preset)
        rows.append(r)
        bar = "-" if r["bar_wall_s"] is None else f"{r['bar_wall_s']:g}"
        print(f"{r['preset']:<34} {r['insns']:>10} {r['uops']:>8} {r['compile_wall_s']:>8.1f} "
              f"{r['compile_cpu_s']:>8.1f} {r['insns_per_cpu_s']:>12.0f} {bar:>6}", flush=True)
    ref = rows[0]["insns_per_cpu_s"]
    for r in rows:
        r["ips_vs_default"] = round(r["insns_per_cpu_s"] / ref, 3)
        r["meets_bar"] = None if r["bar_wall_s"] is None else r["compile_wall_s"] <= r["bar_wall_s"]
    print(json.dumps({"size_px": a.size, "presets": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
