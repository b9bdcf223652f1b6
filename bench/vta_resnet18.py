"""ResNet-18 (224x224) on the accelerator: every offloaded conv, and the whole network.

Builds the seeded ResNet-18 (``tests/models/builders.py``), quantizes it
(``compiler.quant``; batch norm folded, calibrated on ``--calib`` seeded normal
inputs), partitions it (the 3-channel first conv stays on the CPU) and compiles
every offloaded node for the default preset (``compiler.quant.build_plan``,
``conv2d_program``'s tile search ranked against the DRAM model, no measuring).
For each offloaded conv, with two virtual threads (the plan's programs) and
with one (compiled again): cycles, GEMM utilization, DRAM bytes, from the
cycle model (``sim.cycle.run``, timing only) with a DRAM of ``--bytes-per-cycle``
bytes per cycle (default 8). Then the whole network runs once on the ``tsim``
device (``driver.vta_runtime``: values and timing, every program through the
cycle model, CPU steps in numpy) and is checked bit for bit against the
quantized graph on the CPU (``compiler.quant.run``).

Bars (each phase's peak memory must stay under 2 GiB, as the process's peak RSS):
total cycles of the offloaded convs <= 7.7 M, GEMM utilization >= 80 % on every 3x3
conv with at least 64 channels (2 virtual threads), compile <= 60 s, whole-network
cycle simulation <= 60 s. Prints one line per layer, then one JSON line of
figures (units in the names).

Note on the cycle bar: the memory port serves one burst at a time, each paying the
DRAM latency (32 cycles) before its beats. With the contract's bursts of up to 256
beats (AXI4's longest, as VTA's memory engine) a 2 KiB read costs 288 cycles
(7.1 B/cycle); with 16-beat bursts (``--max-burst-beats 16``, this contract until
2026-11-30) it was 48 cycles per 128 B (2.7 B/cycle) and stage 4's 8.4 MB of conv
weights alone took about 3.1 M cycles (total 9.5 M).

Usage: ``python bench/vta_resnet18.py [--bytes-per-cycle N] [--size 224] [--calib K]
[--max-burst-beats B]``.
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

from compiler.frontend.onnx import from_onnx  # noqa: E402
from compiler.quant import QOp, build_plan, quantize, run as run_oracle  # noqa: E402
from compiler.quant.partition import compile_node  # noqa: E402
from sim import cycle  # noqa: E402
from vta_hw.config import load_config  # noqa: E402
from vta_hw.timing import DramTiming  # noqa: E402

BAR_CYCLES, BAR_COMPILE_S, BAR_SIM_S, BAR_MEM_BYTES = 7_700_000, 60.0, 60.0, 2 << 30
BAR_UTIL, BAR_UTIL_CHANNELS = 0.80, 64  # GEMM utilization of 3x3 convs with >= 64 channels


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bytes-per-cycle", type=int, default=8)
    ap.add_argument("--max-burst-beats", type=int, default=DramTiming().max_burst_beats,
                    help="longest DRAM burst, beats (a what-if; the default is the contract's)")
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--calib", type=int, default=2, help="calibration samples")
    a = ap.parse_args(argv)
    from tests.models.builders import build_resnet18
    from driver.device import Device
    from driver.vta_runtime import VtaModule

    cfg = load_config()
    dram = DramTiming(bytes_per_cycle=a.bytes_per_cycle, max_burst_beats=a.max_burst_beats)
    rng = np.random.default_rng(0)
    shape = (1, 3, a.size, a.size)
    graph, params = from_onnx(build_resnet18(size=a.size, seed=0), input_shapes={"input": shape})
    t0 = time.perf_counter()
    qg = quantize(graph, params, {"input": rng.standard_normal((a.calib,) + shape[1:])})
    quantize_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    plan = build_plan(qg, cfg, vthreads=2, dram=dram)
    compile_s = time.perf_counter() - t0
    mem_compile = peak_rss_bytes()
    print(f"preset {cfg.name}, DRAM {a.bytes_per_cycle} B/cycle, latency {dram.latency} cycles; "
          f"ResNet-18 {a.size}x{a.size}: quantized in {quantize_s:.1f} s, partitioned + compiled "
          f"{len(plan.programs)} accelerator nodes in {compile_s:.1f} s")
    print(f"{'layer':<12} {'shape':<26} {'vt':>2} {'cycles':>9} {'util':>6} {'DRAM B':>10} "
          f"{'compile s':>9}")
    layers, tot = [], {2: 0, 1: 0}
    for i, prog in plan.programs.items():
        n = plan.qgraph.nodes[i]
        if n.op is not QOp.CONV2D:
            continue
        x = plan.qgraph.nodes[n.src[0]]
        w = plan.qgraph.params[n.params[0]]
        desc = f"{x.shape[2]}x{x.shape[3]}x{w.shape[1]}->{w.shape[0]} k{w.shape[2]}s{n.attrs['strides'][0]}"
        entry = {"name": n.name, "shape": desc,
                 "util_bar": w.shape[2] == 3 and min(w.shape[0], w.shape[1]) >= BAR_UTIL_CHANNELS}
        for vt in (2, 1):
            t = time.perf_counter()
            p = prog if vt == 2 else compile_node(plan.qgraph, i, cfg, vthreads=1, dram=dram).program
            cs = plan.layer_stats[i]["compile_s"] if vt == 2 else time.perf_counter() - t
            r = cycle.run(p, dram_timing=dram, values=False)
            tot[vt] += r.cycles
            entry[f"vt{vt}"] = {"cycles": r.cycles, "gemm_utilization": round(r.gemm_utilization, 4),
                                "dram_bytes": r.dram_bytes, "compile_s": round(cs, 3)}
            print(f"{n.name:<12} {desc:<26} {vt:>2} {r.cycles:>9} {r.gemm_utilization:>6.3f} "
                  f"{r.dram_bytes:>10} {cs:>9.2f}")
        layers.append(entry)
    print(f"total offloaded convs: {tot[2]} cycles with 2 virtual threads, {tot[1]} with 1")
    adds, add_tot = [], {2: 0, 1: 0}      # the residual adds (compiler/topi/vta/add.py)
    for i, prog in plan.programs.items():
        n = plan.qgraph.nodes[i]
        if n.op is not QOp.ADD:
            continue
        a_ = n.attrs
        desc = f"{n.shape[2]}x{n.shape[3]}x{n.shape[1]} la{a_['la']} lb{a_['lb']} s{a_['shift']}"
        entry = {"name": n.name, "shape": desc}
        for vt in (2, 1):
            p = prog if vt == 2 else compile_node(plan.qgraph, i, cfg, vthreads=1, dram=dram).program
            r = cycle.run(p, dram_timing=dram, values=False)
            add_tot[vt] += r.cycles
            entry[f"vt{vt}"] = {"cycles": r.cycles, "dram_bytes": r.dram_bytes}
            print(f"{n.name:<12} {desc:<26} {vt:>2} {r.cycles:>9} {'':>6} {r.dram_bytes:>10}")
        adds.append(entry)
    print(f"total offloaded residual adds: {add_tot[2]} cycles with 2 virtual threads, "
          f"{add_tot[1]} with 1")

    import tempfile
    from compiler.quant import VtaCompiledModel
    with tempfile.TemporaryDirectory() as d:
        VtaCompiledModel(plan, quantize_s).save(Path(d) / "r18.vtamod")
        m = VtaModule(Path(d) / "r18.vtamod", Device("tsim", config=cfg, dram_timing=dram))
        x = rng.standard_normal(shape).astype(np.float32)
        t0 = time.perf_counter()
        out = m.run({"input": x})[0]
        sim_s = time.perf_counter() - t0
    st = m.stats()
    mem_sim = peak_rss_bytes()
    exact = bool(np.array_equal(out, run_oracle(plan.qgraph, {"input": x})[0]))
    print(f"whole network on tsim: {sim_s:.1f} s wall ({m.device.counters['wall_s']:.1f} s in the "
          f"cycle model), {st['cycles']} cycles, GEMM utilization {100 * st['gemm_utilization']:.1f} %, "
          f"bit-exact with the CPU oracle: {exact}")
    util_min = min(e["vt2"]["gemm_utilization"] for e in layers if e["util_bar"])
    print(f"lowest GEMM utilization of the 3x3 convs with >= {BAR_UTIL_CHANNELS} channels "
          f"(2 virtual threads): {100 * util_min:.1f} %")
    bars = {"offloaded_conv_cycles_le_7.7M": tot[2] <= BAR_CYCLES,
            "util_3x3_ge64ch_ge_80pct": util_min >= BAR_UTIL,
            "compile_le_60s": compile_s <= BAR_COMPILE_S,
            "network_cycle_sim_le_60s": sim_s <= BAR_SIM_S,
            "peak_memory_le_2GiB": max(mem_compile, mem_sim) <= BAR_MEM_BYTES}
    for k, v in bars.items():
        print(f"bar {k}: {'pass' if v else 'FAIL'}")
    figures = {"preset": cfg.name, "input_size": a.size, "dram_bytes_per_cycle": a.bytes_per_cycle,
               "dram_max_burst_beats": dram.max_burst_beats, "dram_latency_cycles": dram.latency,
               "offloaded_convs": len(layers),
               "offloaded_conv_cycles_vt2": tot[2], "offloaded_conv_cycles_vt1": tot[1],
               "offloaded_adds": len(adds), "offloaded_add_cycles_vt2": add_tot[2],
               "offloaded_add_cycles_vt1": add_tot[1],
               "min_gemm_utilization_3x3_ge64ch": util_min,
               "compile_s": round(compile_s, 2), "quantize_s": round(quantize_s, 2),
               "network_sim_s": round(sim_s, 2), "network_cycles": st["cycles"],
               "network_gemm_utilization": round(st["gemm_utilization"], 4),
               "network_dram_bytes": st["dram_bytes"], "bit_exact": exact,
               "peak_rss_compile_bytes": mem_compile, "peak_rss_bytes": mem_sim,
               "bars": bars, "layers": layers, "adds": adds}
    print(json.dumps(figures))
    return 0 if all(bars.values()) and exact else 1


if __name__ == "__main__":
    sys.exit(main())
