"""
Changing the configuration and comparing cycles
===============================================

The same operator, a 14 x 14 pixel 3 x 3 conv from 64 to 64 channels with its
requantization, compiled for several accelerators: the shipped presets of
different GEMM shapes and buffer sizes, and a config of our own (the default
with a memory port twice as wide, written to a JSON file as a user would). For
each: the tile search's choice, cycles, GEMM utilization against that
config's own peak, and the values, checked against numpy.

Run it with ``python tutorials/configurations.py`` (about 30 s).
"""
# %%
import dataclasses
import json
import os

import numpy as np

import compiler
import driver
from compiler.topi.vta import Env
from compiler.topi.vta.layout import conv2d_reference, pack_bias, pack_nchw, pack_oihw, unpack_nchw
from compiler.topi.vta.te_conv2d import conv2d_te_schedule, search_tiling
from compiler.topi.vta.tiling import Conv2dShape
from vta_hw.config import load_config

# %%
# A config of our own: any subset of the fields in a JSON file (the rest keep
# their defaults; ``docs/config.md`` lists each field's range and meaning).
default = load_config("1x16_i8w8a32_15_15_18_17")
os.makedirs("out", exist_ok=True)
with open("out/wide_bus.json", "w") as f:
    json.dump({**default.to_dict(), "BUS_WIDTH": 128}, f)
configs = ["1x16_i8w8a32_15_15_18_17", "out/wide_bus.json", "1x8_i8w8a32_11_12_13_14",
           "2x16_i8w8a32_15_15_18_18", "1x32_i8w8a32_15_16_19_18_bus128"]

# %%
# Compile and run on each
# -----------------------
N, C, H, O, K = 2, 64, 14, 64, 3
rng = np.random.default_rng(0)
x = rng.integers(-128, 128, (N, C, H, H), dtype=np.int8)
w = rng.integers(-128, 128, (O, C, K, K), dtype=np.int8)
bias = rng.integers(-3000, 3000, O).astype(np.int32)
want = conv2d_reference(x, w, bias, (1, 1), (1, 1), 8, relu=True)

rows, err = [], 0
for name in configs:
    env = Env.from_config(name)
    B, BL = env.BATCH, env.BLOCK_IN
    inputs = {"data": pack_nchw(x, B, BL), "kernel": pack_oihw(w, BL, BL),
              "bias": pack_bias(bias, B, BL)}
    NB, CB, OB = inputs["data"].shape[0], inputs["data"].shape[1], inputs["kernel"].shape[0]
    tiling = search_tiling(Conv2dShape(NB, CB, H, H, OB, K, K, 1, 1, 1, 1), env.cfg, bias=1)[0]
    if name == "out/wide_bus.json":      # the default's schedule, so only the port differs
        tiling = rows[0][4]
    s, args = conv2d_te_schedule(env, inputs["data"].shape, inputs["kernel"].shape, (1, 1),
                                 (1, 1), tiling=tiling, bias=True, shift=8, relu=True,
                                 requantize=True)
    kernel = compiler.build(s, args, target="vta", config=env.cfg,
                            kinds={"kernel": "param", "bias": "param"})
    r = driver.run_kernel(kernel, inputs)
    got = unpack_nchw(r["res"], N, O)
    np.testing.assert_array_equal(got, want)
    err = max(err, int(np.abs(got.astype(np.int64) - want).max()))
    rows.append((env.cfg.name, env.cfg.macs_per_cycle, r.cycles, r.gemm_utilization, tiling))

print(f"{'config':34} {'peak MACs/cycle':>15} {'cycles':>9} {'GEMM util':>9}  tiling")
for name, peak, cycles, util, tiling in rows:
    print(f"{name:34} {peak:>15} {cycles:>9} {util:>9.1%}  {tiling}")

# %%
# A wider memory port moves the same bytes in fewer beats (the wide-bus variant
# runs the default's tiling, so the port is the only difference); a larger GEMM core
# (1x32, 2x16) does more per cycle, so fewer cycles for the same work.
cycles = {name: c for name, _, c, _, _ in rows}
assert cycles["1x16_i8w8a32_15_15_18_17_bus128"] <= cycles["1x16_i8w8a32_15_15_18_17"]
assert cycles["1x32_i8w8a32_15_16_19_18_bus128"] < cycles["1x16_i8w8a32_15_15_18_17"]
assert dataclasses.replace(default, BUS_WIDTH=128) == load_config("out/wide_bus.json")
print(f"all {len(rows)} configs match numpy's conv2d (max abs error {err})")
