"""ResNet-18's 3x3 convolutions on the accelerator: cycles and GEMM utilization.

For each 3x3 conv of ResNet-18 with at least 64 channels (56x56x64,
28x28x128, 14x14x256, 7x7x512; stride 1, pad 1, int8, bias, shift 8, relu),
compiles ``compiler.topi.vta.conv2d_program`` on the default preset, with two
virtual threads (latency hiding) and with one, and times the program with the
cycle-accurate model (``sim.cycle.run``, timing only) against a DRAM of
``--bytes-per-cycle`` bytes per cycle (default 8) and ``DramTiming``'s other
defaults (latency 32 cycles, bursts of at most 256 beats). The tile search
measures its ``--tune-top`` best-estimated tilings with the same model (as
TVM's autotuning measure function) unless ``--no-tune``; compile time
includes that. With ``--check`` each program also runs on ``sim.functional``
with random inputs and is compared with numpy (slow for the big layers).

Prints one line per layer and mode, then one line holding a JSON object of the
figures (units in the names).

Usage: ``python bench/vta_conv.py [--bytes-per-cycle N] [--tune-top K] [--no-tune] [--check]``.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from compiler.topi.vta import conv2d_program  # noqa: E402
from sim import cycle, functional  # noqa: E402
from vta_hw.config import load_config  # noqa: E402
from vta_hw.timing import DramTiming  # noqa: E402

LAYERS = [(56, 64), (28, 128), (14, 256), (7, 512)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bytes-per-cycle", type=int, default=8)
    ap.add_argument("--tune-top", type=int, default=8)
    ap.add_argument("--no-tune", action="store_true")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args(argv)
    cfg = load_config()
    dram = DramTiming(bytes_per_cycle=a.bytes_per_cycle)

    def measure(prog):
        return cycle.run(prog, dram_timing=dram, values=False).cycles

    figures = {"preset": cfg.name, "dram_bytes_per_cycle": a.bytes_per_cycle,
               "dram_latency_cycles": dram.latency, "tuned": not a.no_tune}
    print(f"preset {cfg.name}, DRAM {a.bytes_per_cycle} B/cycle, latency {dram.latency} cycles, "
          f"cycle model sim.cycle")
    for hw, c in LAYERS:
        for vt in (2, 1):
            k = conv2d_program(cfg, (1, c, hw, hw), (c, c, 3, 3), 1, 1, shift=8, relu=True,
                               vthreads=vt, dram=dram, tune_top=a.tune_top,
                               measure=None if a.no_tune else measure)
            r = cycle.run(k.program, dram_timing=dram, values=False)
            name = f"conv{hw}x{hw}x{c}_vt{vt}"
            line = (f"{name:<22} tiling {k.tiling.th}x{k.tiling.tw} px x {k.tiling.toc} oc x "
                    f"{k.tiling.tic} ic x {k.tiling.tkh} kh{' wres' if k.tiling.wres else '     '}   insns {len(k.program.insns):5d}   "
                    f"cycles {r.cycles:9d}   GEMM utilization {100 * r.gemm_utilization:5.1f} %   "
                    f"compile {k.compile_s:6.2f} s")
            if a.check:
                rng = np.random.default_rng(0)
                x = rng.integers(-128, 128, (1, c, hw, hw)).astype(np.int8)
                w = rng.integers(-128, 128, (c, c, 3, 3)).astype(np.int8)
                b = rng.integers(-5000, 5000, c).astype(np.int32)
                res = functional.run(k.program, k.program.dram_image(k.inputs(x, w, b)))
                ok = np.array_equal(k.unpack(k.program.read(res.dram, "out")), k.reference(x, w, b))
                line += f"   bit-exact {ok}"
                figures[f"{name}_bit_exact"] = ok
            print(line, flush=True)
            figures[f"{name}_cycles"] = r.cycles
            figures[f"{name}_gemm_utilization_pct"] = round(100 * r.gemm_utilization, 2)
            figures[f"{name}_compile_s"] = round(k.compile_s, 3)
            figures[f"{name}_insns"] = len(k.program.insns)
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
