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
device (``compiler.quant.lower_plan`` + ``driver.runtime.load_module``: values
and timing, every program through the cycle model, CPU steps as compiled
kernels) and is checked bit for bit against the quantized graph on the CPU
(``compiler.quant.run``).

CPU steps (the stem conv, max pool, mean, quantize/dequantize, pack/unpack): the
plan is lowered (``compiler.quant.lower_plan``) into one kernels.so, and each CPU
step runs ``--repeat`` times both as its compiled kernel (through ctypes) and as the
numpy oracle's code (``eval_node``, ``pack_value``, ``unpack_value``) on the same
inputs (the oracle's values); the medians per step, summed over the steps, are the
host time per inference of each (``cpu_steps_compiled_ms``, ``cpu_steps_numpy_ms``).
Every compiled step must equal its numpy step (int8 bit for bit, float within 1e-5
relative).

Bars (each phase's peak memory must stay under 2 GiB, as the process's peak RSS):
total cycles of the offloaded convs <= 7.7 M, GEMM utilization >= 80 % on every 3x3
conv with at least 64 channels (2 virtual threads), compile <= 60 s, whole-network
cycle simulation <= 60 s, CPU steps compiled >= 5x faster than in numpy. Prints one line per layer, then one JSON line of
figures (units in the names).

Note on the cycle bar: the memory port serves one burst at a time, each paying the
DRAM latency (32 cycles) before its beats. With the contract's bursts of up to 256
beats (AXI4's longest, as VTA's memory engine) a 2 KiB read costs 288 cycles
(7.1 B/cycle); with 16-beat bursts (``--max-burst-beats 16``, this contract until
2026-11-30) it was 48 cycles per 128 B (2.7 B/cycle) and stage 4's 8.4 MB of conv
weights alone took about 3.1 M cycles (total 9.5 M).

Usage: ``python bench/vta_resnet18.py [--bytes-per-cycle N] [--size 224] [--calib K]
[--max-burst-beats B] [--repeat R]``.
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
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
BAR_CPU_SPEEDUP = 5.0                   # CPU steps: compiled kernels vs the numpy oracle


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times))


def time_cpu_steps(plan, cm, x: np.ndarray, repeat: int) -> list[dict]:
    """Each CPU step of ``plan`` (cpu, pack, unpack) as its compiled kernel of ``cm`` and as
    numpy, on the oracle's values for input ``x``: one dict per step with the medians of
    ``repeat`` runs (ms) and whether the two outputs agree (module docstring)."""
    from compiler.codegen.llvm.artifact import load_library
    from compiler.quant.partition import input_buffers, pack_value, unpack_value
    from compiler.quant.qgraph import eval_node
    from compiler.topi.vta.layout import pack_nchw
    qg, cfg = plan.qgraph, plan.config
    oracle = run_oracle(qg, {qg.nodes[qg.inputs[0]].name: x}, keep=True)
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "kernels.so").write_bytes(cm.files["kernels.so"])
        lib = load_library(str(Path(d) / "kernels.so"))
    gj = cm.graph_json
    workspace = np.zeros(max(gj["workspace_bytes"], 1), np.uint8)
    vals = {f"%{i}": oracle[i] for i in qg.inputs}
    calls = iter(c for c in gj["calls"])
    rows = []
    for s in plan.steps:
        n = qg.nodes[s.node]
        args = [vals[v] for v in s.inputs]
        if s.kind == "vta":     # the accelerator's packed output, from the oracle's value
            next(calls)
            y = oracle[s.node]
            img = y.T[None, :, None, :] if y.ndim == 2 else y
            vals[s.output] = pack_nchw(img, cfg.BATCH, cfg.BLOCK_OUT)
            continue
        if s.kind == "cpu":
            numpy_fn = lambda: eval_node(n, args, qg.params)  # noqa: E731
        elif s.kind == "pack":
            prog = plan.programs[s.node]
            shape = prog.buffer(input_buffers(prog)[s.arg]).shape
            numpy_fn = lambda: pack_value(cfg, args[0], shape)  # noqa: E731
        else:
            numpy_fn = lambda: unpack_value(args[0], n.shape)  # noqa: E731
        want = numpy_fn()
        vals[s.output] = want
        row = {"kind": s.kind, "node": s.node, "name": n.name, "op": n.op.value,
               "numpy_ms": _median_ms(numpy_fn, repeat), "compiled_ms": 0.0, "exact": True}
        if s.kind == "cpu" and n.op is QOp.FLOAT and n.attrs["op"] == "PARAM":
            rows.append(row)    # a constant: a param of the module, no kernel
            continue
        c = next(calls)
        abi = gj["kernels"][c["kernel"]]
        out = np.zeros(abi[-1]["shape"], abi[-1]["dtype"])
        kargs = list(args)
        for r, a in zip(c["args"][len(args):-1], abi[len(args):-1]):
            if r["kind"] == "param":
                kargs.append(cm.params[r["name"]])
            else:
                nb = int(np.prod(a["shape"])) * np.dtype(a["dtype"]).itemsize
                kargs.append(workspace[r["offset"]:r["offset"] + nb].view(a["dtype"]).reshape(a["shape"]))
        fn = lib[c["kernel"]]
        row["compiled_ms"] = _median_ms(lambda: fn(*kargs, out), repeat)
        if out.dtype == np.float32:
            row["exact"] = bool(np.allclose(out, want, rtol=1e-5, atol=0))
        else:
            row["exact"] = bool(np.array_equal(out, want))
        rows.append(row)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bytes-per-cycle", type=int, default=8)
    ap.add_argument("--max-burst-beats", type=int, default=DramTiming().max_burst_beats,
                    help="longest DRAM burst, beats (a what-if; the default is the contract's)")
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--calib", type=int, default=2, help="calibration samples")
    ap.add_argument("--repeat", type=int, default=5, help="runs per CPU step (median)")
    a = ap.parse_args(argv)
    from tests.models.builders import build_resnet18
    from compiler.quant.lower_plan import lower_plan
    from driver.device import Device
    from driver.runtime import load_module

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

    t0 = time.perf_counter()
    cm = lower_plan(plan)
    cpu_build_s = time.perf_counter() - t0
    m = load_module(cm, device=Device("tsim", config=cfg, dram_timing=dram))
    x = rng.standard_normal(shape).astype(np.float32)
    t0 = time.perf_counter()
    out = m(x)[0]
    sim_s = time.perf_counter() - t0
    st = m.stats()
    mem_sim = peak_rss_bytes()
    exact = bool(np.array_equal(out, run_oracle(plan.qgraph, {"input": x})[0]))
    print(f"whole network on tsim: {sim_s:.1f} s wall ({m.device.counters['wall_s']:.1f} s in the "
          f"cycle model), {st['cycles']} cycles, GEMM utilization {100 * st['gemm_utilization']:.1f} %, "
          f"bit-exact with the CPU oracle: {exact}")
    steps = time_cpu_steps(plan, cm, x, a.repeat)
    cpu_ms = {k: sum(r[f"{k}_ms"] for r in steps) for k in ("compiled", "numpy")}
    cpu_speedup = cpu_ms["numpy"] / max(cpu_ms["compiled"], 1e-9)
    cpu_exact = all(r["exact"] for r in steps)
    print(f"{'CPU step':<22} {'op':<10} {'numpy ms':>9} {'compiled ms':>11}")
    for r in steps:
        print(f"{r['kind'] + ' ' + r['name']:<22} {r['op']:<10} {r['numpy_ms']:>9.3f} "
              f"{r['compiled_ms']:>11.3f}{'' if r['exact'] else '  MISMATCH'}")
    print(f"CPU steps per inference: {cpu_ms['compiled']:.2f} ms compiled ({cpu_build_s:.1f} s to "
          f"build), {cpu_ms['numpy']:.2f} ms in numpy: {cpu_speedup:.1f}x; compiled equal to "
          f"numpy on every step: {cpu_exact}")
    util_min = min(e["vt2"]["gemm_utilization"] for e in layers if e["util_bar"])
    print(f"lowest GEMM utilization of the 3x3 convs with >= {BAR_UTIL_CHANNELS} channels "
          f"(2 virtual threads): {100 * util_min:.1f} %")
    bars = {"offloaded_conv_cycles_le_7.7M": tot[2] <= BAR_CYCLES,
            "util_3x3_ge64ch_ge_80pct": util_min >= BAR_UTIL,
            "compile_le_60s": compile_s <= BAR_COMPILE_S,
            "network_cycle_sim_le_60s": sim_s <= BAR_SIM_S,
            "peak_memory_le_2GiB": max(mem_compile, mem_sim) <= BAR_MEM_BYTES,
            "cpu_steps_speedup_ge_5x": cpu_speedup >= BAR_CPU_SPEEDUP}
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
               "cpu_steps_compiled_ms": round(cpu_ms["compiled"], 3),
               "cpu_steps_numpy_ms": round(cpu_ms["numpy"], 3),
               "cpu_steps_speedup": round(cpu_speedup, 2), "cpu_steps_exact": cpu_exact,
               "cpu_kernels_build_s": round(cpu_build_s, 2),
               "cpu_steps": [{k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()}
                             for r in steps],
               "bars": bars, "layers": layers, "adds": adds}
    print(json.dumps(figures))
    return 0 if all(bars.values()) and exact and cpu_exact else 1


if __name__ == "__main__":
    sys.exit(main())
