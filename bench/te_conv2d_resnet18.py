"""The tensor-expression conv route (``compiler.topi.vta.te_conv2d``) against the library's conv
(``compiler.topi.vta.conv2d_program``) on every offloaded ResNet-18 layer, on every preset.

For each conv of ResNet-18 but the 3-channel stem (which stays on the CPU), and its dense
layer as a 1x1 conv (output channels rounded up to the block), both routes compile the
quantized op (bias, shift 8, relu; two virtual threads, each its own tile search) and the
cycle model times both programs (``sim.cycle.run``, timing only; with ``--values`` the te
program runs with data and its output is checked bit-exact against numpy). One line per
layer: preset, layer, te cycles, library cycles, their ratio, both compile times (s) and
the te tiling; then one JSON object: the compile seconds per preset and the rows.
``--size 224`` (the default) is the real network (slow on the small presets: minutes per
layer, in the VTA code generator); ``--size 32`` its small version
(tests/compiler/topi/vta/test_te_resnet18.py runs it in CI).

Usage: ``python bench/te_conv2d_resnet18.py [--size 224] [--preset P|all ...] [--layer L ...]
[--values none|sample|all]``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from compiler.topi.vta import conv2d_program  # noqa: E402
from compiler.topi.vta.layout import (conv2d_reference, pack_bias, pack_nchw,  # noqa: E402
                                      pack_oihw, unpack_nchw)
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


def compare(preset: str, name: str, layer, values: bool = False, seed: int = 0) -> dict:
    """Compile ``layer`` both ways on ``preset`` and time both programs on the cycle model;
    with ``values`` the te program also runs with data (random int8 activations and
    weights, int32 bias) and its output is checked bit-exact against numpy's conv
    (``layout.conv2d_reference``): ``bit_exact`` True, or AssertionError."""
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
    row = {"preset": preset, "layer": name, "shape": layer}
    if values:
        rng = np.random.default_rng(seed)
        x = rng.integers(-128, 128, (B, C, H, H), dtype=np.int8)
        w = rng.integers(-128, 128, (O, C, K, K), dtype=np.int8)
        b = rng.integers(-3000, 3000, O).astype(np.int32)
        dram = te.dram_image({"data": pack_nchw(x, B, BL), "kernel": pack_oihw(w, BL, BL),
                              "bias": pack_bias(b, B, BL)})
        run = cycle.run(te, dram)
        got = unpack_nchw(te.read(run.dram, "res"), B, O)
        want = conv2d_reference(x, w, b, (st, st), (p, p), 8, relu=True)
        np.testing.assert_array_equal(got, want, err_msg=f"te conv2d {name} on {preset}")
        row["bit_exact"] = True
    else:
        run = cycle.run(te, values=False)
    lib_cycles = cycle.run(lib.program, values=False).cycles
    return row | {"te_cycles": run.cycles, "library_cycles": lib_cycles,
                  "te_over_library": run.cycles / lib_cycles, "te_tiling": str(tiling),
                  "te_insns": len(te.insns), "library_insns": len(lib.program.insns),
                  "te_compile_s": round(t2 - t1, 2), "library_compile_s": round(t1 - t0, 2)}


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--preset", action="append",
                    help="a preset (repeat), or 'all' (the default: every preset)")
    ap.add_argument("--layer", action="append", help="a layer name (repeat; default: all)")
    ap.add_argument("--values", choices=("none", "sample", "all"), default="none",
                    help="check the te output bit-exact against numpy: on no layer, on one "
                         "layer per preset (a different one for each preset), or on all")
    args = ap.parse_args(argv)
    presets = preset_names() if not args.preset or "all" in args.preset else args.preset
    layers = [(n, l) for n, l in resnet18_layers(args.size) if not args.layer or n in args.layer]
    unknown = set(args.layer or ()) - {n for n, _ in resnet18_layers(args.size)}
    if unknown:
        ap.error(f"--layer must name layers of {[n for n, _ in resnet18_layers(args.size)]}, "
                 f"not {sorted(unknown)}")
    rows = []
    for k, preset in enumerate(presets):
        # the sampled layer rotates with the preset's place among the presets
        rank = preset_names().index(preset) if preset in preset_names() else k
        for j, (name, layer) in enumerate(layers):
            check = args.values == "all" or (args.values == "sample"
                                             and j == rank % len(layers))
            r = compare(preset, name, layer, values=check, seed=j)
            rows.append(r)
            print(f"{preset:34} {name:22} te {r['te_cycles']:>10} cycles  library "
                  f"{r['library_cycles']:>10} cycles  x{r['te_over_library']:.2f}  "
                  f"compile te {r['te_compile_s']:7.1f} s library {r['library_compile_s']:7.1f} s"
                  f"{'  bit-exact' if r.get('bit_exact') else ''}  {r['te_tiling']}", flush=True)
    per_preset = {p: {"te_compile_s": round(sum(r["te_compile_s"] for r in rows
                                                if r["preset"] == p), 1),
                      "library_compile_s": round(sum(r["library_compile_s"] for r in rows
                                                     if r["preset"] == p), 1)}
                  for p in presets}
    print(json.dumps({"size_px": args.size, "compile_s_by_preset": per_preset,
                      "te_over_library_max": max(r["te_over_library"] for r in rows),
                      "rows": rows}))
    return rows


if __name__ == "__main__":
    main()
