"""What a QDQ model's multiplier requantization costs on the accelerator, in cycles.

For ResNet-18's 3x3 convolutions with at least 128 channels (28x28x128, 14x14x256,
7x7x512; stride 1, pad 1, int8, bias, relu, per-channel weight scales), compiles
``compiler.topi.vta.conv2d_program`` on the default preset twice: with per-channel shifts
only (power-of-two scales, the quantizer's own) and with per-channel shifts and
multipliers (a QDQ model's scales: MUL by a per-lane vector, SHR, ADD, SHR, each ALU MUL
uop taking ``ALU_MUL_CYCLES_PER_UOP`` cycles), and times both with the cycle-accurate
model (``sim.cycle.run``, timing only; ``DramTiming`` defaults). The multiplier's cost is
the ratio of the two, measured in the same run.

Prints one line per layer, then one line holding a JSON object of the figures (units in
the names).

Usage: ``python bench/vta_requant.py``.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from compiler.topi.vta import conv2d_program  # noqa: E402
from sim import cycle  # noqa: E402
from vta_hw.config import load_config  # noqa: E402

LAYERS = [(28, 128), (14, 256), (7, 512)]


def main() -> int:
    cfg = load_config()
    rng = np.random.default_rng(0)
    figures = {"preset": cfg.name}
    for hw, c in LAYERS:
        shifts = tuple(int(v) for v in rng.integers(2, 6, c))
        mults = tuple(int(v) for v in rng.integers(12000, 32768, c))
        cycles = {}
        for mode, kw in (("shift", {}), ("mult", {"mult": mults, "post": 22})):
            k = conv2d_program(cfg, (1, c, hw, hw), (c, c, 3, 3), 1, 1, shift=shifts, relu=True,
                               **kw)
            cycles[mode] = cycle.run(k.program, values=False).cycles
        name = f"conv{hw}x{hw}x{c}"
        ratio = cycles["mult"] / cycles["shift"]
        print(f"{name:<14} shifts only {cycles['shift']:9d} cycles   shifts + multipliers "
              f"{cycles['mult']:9d} cycles   ratio {ratio:.3f}", flush=True)
        figures[f"{name}_shift_cycles"] = cycles["shift"]
        figures[f"{name}_mult_cycles"] = cycles["mult"]
        figures[f"{name}_mult_over_shift_ratio"] = round(ratio, 4)
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
