"""The tile search's estimate against the cycle model: regret and rank correlation per port.

For each configuration (the default preset with its 64-bit memory port, the same with a
128-bit port, and the narrow ``1x4_i8w8a32_8_8_8_9_bus32`` with a 32-bit port) and each
small conv layer of ``LAYERS``, ranks every tiling that fits (two virtual threads) by
``compiler.topi.vta.tiling.estimate`` and times, on the cycle model (``sim.cycle``,
deterministic, so machine load does not move the figures), the ``--top`` best-ranked ones
plus ``--spread`` more spaced evenly down the ranking. Reports per layer the pick's cycles
over the best measured tiling's (the regret; 1.0 is a perfect pick) and Spearman's rank
correlation of estimate and cycles over the measured tilings, then one JSON line with the
worst regret per configuration. Tilings the code generator refuses are skipped.

Usage: ``python bench/vta_tile_regret.py [--top 8] [--spread 8] [--configs default,wide,narrow]``.
"""
from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from compiler.codegen.vta.eval import CodegenError  # noqa: E402
from compiler.topi.vta import conv2d_program  # noqa: E402
from compiler.topi.vta.tiling import Conv2dShape, Tiling, candidates  # noqa: E402
from sim import cycle  # noqa: E402
from vta_hw.config import load_config  # noqa: E402

DEFAULT = load_config("1x16_i8w8a32_15_15_18_17")
CONFIGS = {"default": DEFAULT, "wide": dataclasses.replace(DEFAULT, BUS_WIDTH=128),
           "narrow": load_config("1x4_i8w8a32_8_8_8_9_bus32")}
#: (N, C, H=W, O, K, stride, padding): ResNet-like 3x3 and 1x1 layers, small enough that
#: the narrow preset's programs time in seconds
LAYERS = [(1, 16, 14, 16, 3, 1, 1), (1, 32, 8, 32, 3, 1, 1), (1, 16, 8, 32, 3, 2, 1),
          (1, 32, 8, 64, 1, 2, 0), (2, 64, 14, 64, 3, 1, 1)]


def shape(cfg, n, c, h, o, k, st, pad) -> Conv2dShape:
    return Conv2dShape(-(-n // cfg.BATCH), -(-c // cfg.BLOCK_IN), h, h, -(-o // cfg.BLOCK_OUT),
                       k, k, st, st, pad, pad)


def cycles(cfg, layer, t: Tiling) -> int | None:
    """Cycles of the conv (bias, shift 3, relu) at tiling ``t``; None if it does not compile."""
    n, c, h, o, k, st, pad = layer
    try:
        kern = conv2d_program(cfg, (n, c, h, h), (o, c, k, k), st, pad, shift=3, relu=True,
                              bias=True, tiling=t)
    except CodegenError:
        return None
    return cycle.run(kern.program, values=False).cycles


def spearman(a, b) -> float:
    ra, rb = (np.argsort(np.argsort(x, kind="stable")) for x in (a, b))
    return float(np.corrcoef(ra, rb)[0, 1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--top", type=int, default=8, help="best-ranked tilings timed per layer")
    ap.add_argument("--spread", type=int, default=8,
                    help="more tilings timed per layer, spaced evenly down the ranking")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    a = ap.parse_args(argv)
    fig: dict = {}
    print(f"{'config':8} {'layer':26} {'timed':>5} {'pick cycles':>11} {'best cycles':>11} "
          f"{'regret':>7} {'spearman':>8}  pick")
    for name in a.configs.split(","):
        cfg = CONFIGS[name]
        worst = 1.0
        for layer in LAYERS:
            ranked = candidates(shape(cfg, *layer), cfg, 1, 2, top=1 << 30)
            step = max(1, (len(ranked) - a.top) // max(1, a.spread))
            picked = list(dict.fromkeys(itertools.chain(ranked[:a.top], ranked[a.top::step])))
            timed = [(i, c) for i, c in ((ranked.index(t), cycles(cfg, layer, t)) for t in picked)
                     if c is not None]
            pick = timed[0][1]               # the best-ranked tiling that compiles
            best = min(c for _, c in timed)
            rho = spearman([i for i, _ in timed], [c for _, c in timed])
            worst = max(worst, pick / best)
            print(f"{name:8} {str(layer):26} {len(timed):>5} {pick:>11} {best:>11} "
                  f"{pick / best:>7.3f} {rho:>8.3f}  {ranked[timed[0][0]]}", flush=True)
            fig[f"{name}_{'x'.join(map(str, layer))}_regret"] = round(pick / best, 4)
            fig[f"{name}_{'x'.join(map(str, layer))}_spearman"] = round(rho, 3)
        fig[f"{name}_worst_regret"] = round(worst, 4)
    print(json.dumps(fig))
    return 0


if __name__ == "__main__":
    sys.exit(main())
