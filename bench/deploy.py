"""Deployed modules: the AOT executor against the graph executor (and onnxruntime) on x86-64.

Model: ResNet-18 (``tests/models/builders.py``, seeded random weights, 1000 classes),
batch 1, ``--size`` x ``--size`` (224 by default), compiled twice from the same ONNX
file by ``compiler.build_model``: ``executor="graph"`` and ``executor="aot"``.

1. Both outputs are checked against each other (the same kernels and memory plan:
   they must agree exactly).
2. Latency: ``--rounds`` alternating rounds of ``--repeat`` runs of each module loaded
   with ``driver.runtime.load_module`` in this process, after a warm-up; the best
   single run counts (the machine may be shared; the least disturbed run is the
   fairest figure for both), the median is printed too.
3. Peak memory: each of the three (AOT module, graph-executor module, onnxruntime
   session on the ONNX file) in a fresh child process, measured the same way: after
   the imports, the peak resident set is reset (``/proc/self/clear_refs`` = 5) and the
   resident set read (``VmRSS``); then the model is loaded and run ``--repeat`` times
   and the peak (``VmHWM``) read. The growth (peak - before, MiB) is what holding and
   running the model costs. The AOT module's stated need (workspace + constants, from
   its manifest) is printed beside it.

Both runtimes use ``--threads`` threads (default: all cores the process may use):
``OMP_NUM_THREADS`` for our kernels, ``intra_op_num_threads`` for onnxruntime.

Bar (issue 21): AOT latency no worse than the graph executor's (ratio <= 1.0; on a
shared machine, within noise). The last line is one JSON object of the figures, with
the WebAssembly ones of ``bench/deploy_wasm.py`` (ResNet-18 in Node against
onnxruntime-web, one thread each; bar <= 1.0x) when node and driver/web's npm tools
are installed (otherwise ``"wasm_skipped"`` says which is missing).

Run: ``.venv/bin/python bench/deploy.py [--size 224] [--threads 2]``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

from timing import timed

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

#: child process: python -c CHILD KIND PATH SIZE REPEAT THREADS -> one JSON line
CHILD = r"""
import json, sys
kind, path, size, repeat, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
import numpy as np
import onnxruntime as ort
from driver.runtime import load_module

def status(key):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith(key + ":")) / 1024

x = np.random.default_rng(0).standard_normal((1, 3, size, size)).astype(np.float32)
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")                         # reset VmHWM to the current resident set
before = status("VmRSS")
if kind == "onnxruntime":
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    run = lambda: sess.run(None, {name: x})
else:
    m = load_module(path)
    run = lambda: m(x)
for _ in range(repeat):
    run()
print(json.dumps({"before_mib": before, "peak_mib": status("VmHWM")}))
"""


def peak_growth(kind: str, path: str, size: int, repeat: int, threads: int) -> dict:
    """Resident-set figures (MiB) of loading and running ``path`` in a fresh process."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), PYTHONPATH=ROOT)
    proc = subprocess.run([sys.executable, "-c", CHILD, kind, path, str(size), str(repeat),
                           str(threads)], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=1800)
    if proc.returncode != 0:
        raise SystemExit(f"measuring {kind} failed:\n{proc.stderr}")
    doc = json.loads(proc.stdout.strip().splitlines()[-1])
    return {**doc, "growth_mib": doc["peak_mib"] - doc["before_mib"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")

    import numpy as np
    import onnx

    from compiler.build_model import build_model
    from driver.runtime import load_module
    from tests.models import builders

    with tempfile.TemporaryDirectory(prefix="bench_deploy_") as tmp:
        onnx_path = os.path.join(tmp, "resnet18.onnx")
        onnx.save(builders.build_resnet18(size=args.size), onnx_path)
        folders = {}
        for executor in ("graph", "aot"):
            folders[executor] = os.path.join(tmp, f"resnet18_{executor}.vtamod")
            build_model(onnx_path, executor=executor).save(folders[executor])
            print(f"compiled {folders[executor]}", flush=True)
        mods = {k: load_module(v) for k, v in folders.items()}
        x = np.random.default_rng(0).standard_normal((1, 3, args.size, args.size)).astype(np.float32)
        ys = {k: m(x)[0] for k, m in mods.items()}
        same = bool(np.array_equal(ys["aot"], ys["graph"]))
        print(f"aot output == graph output: {same}")

        times = {k: [] for k in mods}
        for _ in range(args.rounds):
            for k, m in mods.items():
                times[k] += timed(m.run, args.repeat)
        lat = {k: {"best_ms": 1e3 * min(t), "median_ms": 1e3 * float(np.median(t))}
               for k, t in times.items()}
        for k, v in lat.items():
            print(f"{k:6s} latency: best {v['best_ms']:.2f} ms, median {v['median_ms']:.2f} ms")
        ratio = lat["aot"]["best_ms"] / lat["graph"]["best_ms"]
        del mods

        mem = {"aot": peak_growth("aot", folders["aot"], args.size, args.repeat, args.threads),
               "graph": peak_growth("graph", folders["graph"], args.size, args.repeat, args.threads),
               "onnxruntime": peak_growth("onnxruntime", onnx_path, args.size, args.repeat,
                                          args.threads)}
        with open(os.path.join(folders["aot"], "manifest.json")) as f:
            aot = json.load(f)["aot"]
        from deploy_wasm import missing_tools, wasm_figures
        why = missing_tools()
        web = {"wasm_skipped": why} if why else wasm_figures(onnx_path, args.size)
    stated = (aot["workspace_bytes"] + aot["constant_bytes"]) / 2**20
    for k, v in mem.items():
        print(f"{k:11s} peak resident growth: {v['growth_mib']:.1f} MiB")
    if "wasm_best_ms" in web:
        print(f"wasm in Node: best {web['wasm_best_ms']:.1f} ms; onnxruntime-web: best "
              f"{web['ortweb_best_ms']:.1f} ms ({web['wasm_over_ortweb_latency_ratio']:.2f}x)")
    print(f"AOT stated need: workspace {aot['workspace_bytes'] / 2**20:.2f} MiB + constants "
          f"{aot['constant_bytes'] / 2**20:.2f} MiB = {stated:.1f} MiB")
    print(json.dumps({
        "model": "resnet18", "size": args.size, "batch": 1, "threads": args.threads,
        "aot_equals_graph": same,
        "aot_latency_best_ms": lat["aot"]["best_ms"], "graph_latency_best_ms": lat["graph"]["best_ms"],
        "aot_latency_median_ms": lat["aot"]["median_ms"],
        "graph_latency_median_ms": lat["graph"]["median_ms"],
        "aot_over_graph_latency_ratio": ratio,
        "aot_peak_growth_mib": mem["aot"]["growth_mib"],
        "graph_peak_growth_mib": mem["graph"]["growth_mib"],
        "onnxruntime_peak_growth_mib": mem["onnxruntime"]["growth_mib"],
        "aot_stated_workspace_plus_constants_mib": stated,
        "bar_aot_latency_le_graph": ratio <= 1.0,
        **web,
    }))


if __name__ == "__main__":
    main()
