"""
2D convolution optimization
===========================

ResNet-18's first offloaded layer (56 x 56 pixels, 64 -> 64 channels, 3 x 3,
padding 1) as VTA's "2D Convolution Optimization" tutorial writes it: a packed
conv2d declared with tensor expressions (``compiler.topi.vta.te_conv2d``), the
output tiled by rows, columns and channel blocks so that each tile fits the
accumulator, the reduction in steps of input-channel blocks, the tiles split
over virtual threads, and the requantization (bias, shift, relu, clip) on the
ALU. The tiling comes from the same search the library's conv uses.

Run it with ``python tutorials/convolution_optimization.py`` (about 20 s).
"""
# %%
import dataclasses

import numpy as np

import compiler
import driver
from driver.device import Device
from compiler.topi.vta import Env, conv2d_program
from compiler.topi.vta.layout import conv2d_reference, pack_bias, pack_nchw, pack_oihw, unpack_nchw
from compiler.topi.vta.te_conv2d import conv2d_te_program, conv2d_te_schedule, search_tiling
from compiler.topi.vta.tiling import Conv2dShape, estimate
from sim import cycle

env = Env.from_config("1x16_i8w8a32_15_15_18_17")
N, C, H, W, O, K, stride, pad = 1, 64, 56, 56, 64, 3, 1, 1
shift = 8

# %%
# The shape in packed elements, and the tile search
# -------------------------------------------------
# The whole 56 x 56 x 64 int32 output needs 56 * 56 * 4 = 12544 accumulator
# entries; the default accelerator holds 2048. ``search_tiling`` ranks every
# tiling that fits (each virtual thread owns half of every buffer) by an
# estimate of its cycles, keeping those whose tiles divide the shape.
shape = Conv2dShape(N // env.BATCH, C // env.BLOCK_IN, H, W, O // env.BLOCK_OUT, K, K,
                    stride, stride, pad, pad)
print(f"output {shape.OH}x{shape.OW}, {shape.OB} channel blocks; ACC holds {env.cfg.acc_depth} entries")
for t in search_tiling(shape, env.cfg, bias=1, vthreads=2, top=3):
    print(f"  {t}: {t.buffers(shape, 1)} entries per thread, "
          f"estimate {estimate(t, shape, env.cfg, 1):.0f} cycles")

# %%
# The schedule, built and run
# ---------------------------
# ``conv2d_te_schedule`` returns the te schedule and its arguments (read its
# source: cache_read into the SRAM scopes at the reduction step, the output
# tiles, the virtual threads, the GEMM tensorized, and the bias, shift, relu and
# clip stages computed at the output tile and marked ``env.alu``, as TVM-VTA's
# tutorial writes them); ``compiler.build``
# makes the kernel and ``driver.run_kernel`` runs it on the cycle model. The
# same tiles without and with virtual threads: with two, one thread's loads and
# stores overlap the other's GEMMs.
rng = np.random.default_rng(0)
x = rng.integers(-128, 128, (N, C, H, W), dtype=np.int8)
w = rng.integers(-128, 128, (O, C, K, K), dtype=np.int8)
b = rng.integers(-3000, 3000, O).astype(np.int32)
inputs = {"data": pack_nchw(x, env.BATCH, env.BLOCK_IN),
          "kernel": pack_oihw(w, env.BLOCK_OUT, env.BLOCK_IN),
          "bias": pack_bias(b, env.BATCH, env.BLOCK_OUT)}
want = conv2d_reference(x, w, b, (stride, stride), (pad, pad), shift, relu=True)

tiling = search_tiling(shape, env.cfg, bias=1, vthreads=2)[0]
cycles = {}
for vt in (1, 2):           # the same tiles, without and with virtual threads
    t = dataclasses.replace(tiling, vt=vt)
    s, args = conv2d_te_schedule(env, inputs["data"].shape, inputs["kernel"].shape,
                                 (stride, stride), (pad, pad), tiling=t, bias=True,
                                 shift=shift, relu=True, requantize=True)
    kernel = compiler.build(s, args, target="vta", config=env.cfg, name="conv2d",
                            kinds={"kernel": "param", "bias": "param"})
    r = driver.run_kernel(kernel, inputs)
    np.testing.assert_array_equal(unpack_nchw(r["res"], N, O), want)
    cycles[vt] = r.cycles
    print(f"te conv2d, {t}: {r.summary()}")
assert cycles[2] < cycles[1]

# %%
# Measuring instead of estimating
# -------------------------------
# The estimate ranks tilings for the library's schedule; this one orders its
# instructions differently, so the best estimate is not always the fastest.
# Timing the best few on the cycle model (timing only: ``values=False``) is a
# small search by measurement, what an auto-tuner does at scale.
measured = []
for vt in (1, 2):
    for t in search_tiling(shape, env.cfg, bias=1, vthreads=vt, top=3):
        prog = conv2d_te_program(env.cfg, inputs["data"].shape, inputs["kernel"].shape,
                                 (stride, stride), (pad, pad), tiling=t, bias=True, shift=shift,
                                 relu=True, requantize=True)
        measured.append((cycle.run(prog, values=False).cycles, t))
        print(f"  {t}: {measured[-1][0]} cycles")
best_cycles, best = min(measured, key=lambda m: m[0])
print(f"fastest te tiling {best}: {best_cycles} cycles")

# %%
# The library's conv (``conv2d_program``: the same schedule written as
# loop IR, with remainder tiles and weights kept resident) is the yardstick; it
# is a ``vta_hw.program.Program``, run on a ``Device`` by buffer name.
assert cycles[2] < cycles[1]
lib = conv2d_program(env.cfg, x.shape, w.shape, strides=stride, padding=pad, shift=shift,
                     relu=True, bias=True)
with Device("tsim", config=env.cfg) as dev:
    h = dev.load(lib.program)
    for name, arr in lib.inputs(x, w, b).items():
        h.copy_in(name, arr)
    res = dev.run_sync(h)
    got = lib.unpack(h.copy_out("out"))
    np.testing.assert_array_equal(got, want)
print(f"library conv2d_program, {lib.tiling}: {res.cycles} cycles, "
      f"GEMM utilization {dev.gemm_utilization():.1%}")
print(f"matches numpy's conv2d (max abs error {np.abs(got.astype(np.int64) - want).max()})")
