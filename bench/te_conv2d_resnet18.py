"""The tensor-expression conv route (``compiler.topi.vta.te_conv2d``) against the library's conv
(``compiler.topi.vta.conv2d_program``) on every offloaded ResNet-18 layer, on every preset.

For each conv of ResNet-18 but the 3-channel stem (which stays on the CPU), and its dense
layer as a 1x1 conv (output channels rounded up to the block), both routes compile the
quantized op (bias, shift 8, relu; two virtual threads, each its own tile search) and the
cycle model times both programs (``sim.cycle.run``, timing only). One line per layer:
preset, layer, te cycles, library cycles, their ratio and the te tiling; then one JSON
line of the rows. ``--size 224`` (the default) is the real network (slow on the small
presets: minutes); ``--size 32`` its small version (tests/compiler/topi/vta/test_te_resnet18.py
runs it in CI).

Usage: ``python bench/te_conv2d_resnet18.py [--size 224] [--preset P ...]``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from compiler.topi.vta import conv2d_program  # noqa: E402
from compiler.topi.vta.te_conv2d import conv2d_te_program, search_tiling  # noqa: E402
from compiler.topi.vta.tiling import Conv2dShape  # noqa: E402
from sim import cycle  # noqa: E402
from vta_hw.config import load_config, preset_names  # noqa: E402


def resnet18_layers(size: int = 224) -> list[tuple[str, tuple[int, int, int, int, int, int]]]:
    """The offloaded convs of ResNet-18 at input ``size``, one of each distinct shape, as
    ``(name, (C, H, O, K, stride, pad))`` (square images); the dense as a 1x1 conv."""
    h = size // 4                       # after the stride-2 stem and the stride-2 max pool
    out = [("layer1.conv", (64, h, 64, 3, 1, 1))]
    c = 64
    for stage, o in ((2, 128), (3, 256), (4, 512)):
        out += [(f"layer{stage}.0.conv1", (c, h, o, 3, 2, 1)),
                (f"layer{stage}.0.downsample", (c, h, o, 1, 2, 0))]
        h = (h + 1) // 2
        out.append((f"layer{stage}.conv", (o, h, o, 3, 1, 1)))
        c = o
    out.append(("fc", (512, 1, 1000, 1, 1, 0)))
    return out


def compare(preset: str, name: str, layer) -> dict:
    """Compile ``layer`` both ways on ``preset`` and time both programs."""
    cfg = load_config(preset)
    C, H, O, K, st, p = layer
    B, BL = cfg.BATCH, cfg.BLOCK
    CB, OB = -(-C // BL), -(-O // BL)
    t0 = time.perf_counter()
    lib = conv2d_program(cfg, (B, C, H, H), (O, C, K, K), strides=st, padding=p, shift=8,
                         relu=True, bias=True)
    t1 = time.perf_counter()
    shape = Conv2dShape(1, CB, H, H, OB, K, K, st, st, p, p)
    tiling = search_tiling(shape, cfg, bias=1, vthreads=2)[0]
    te = conv2d_te_program(cfg, (1, CB, H, H, B, BL), (OB, CB, K, K, BL, BL), (st, st), (p, p),
                           tiling=tiling, bias=True, shift=8, relu=True, requantize=True)
    t2 = time.perf_counter()
    te_cycles = cycle.run(te, values=False).cycles
    lib_cycles = cycle.run(lib.program, values=False).cycles
    return {"preset": preset, "layer": name, "shape": layer, "te_cycles": te_cycles,
            "library_cycles": lib_cycles, "te_over_library": te_cycles / lib_cycles,
            "te_tiling": str(tiling), "te_compile_s": round(t2 - t1, 2),
            "library_compile_s": round(t1 - t0, 2)}


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--preset", action="append", help="a preset (repeat; default: every one)")
    args = ap.parse_args(argv)
    rows = []
    for preset in args.preset or preset_names():
        for name, layer in resnet18_layers(args.size):
            r = compare(preset, name, layer)
            rows.append(r)
            print(f"{preset:34} {name:22} te {r['te_cycles']:>10} cycles  library "
                  f"{r['library_cycles']:>10} cycles  x{r['te_over_library']:.2f}  {r['te_tiling']}",
                  flush=True)
    print(json.dumps(rows))
    return rows


if __name__ == "__main__":
    main()
