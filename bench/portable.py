"""Portable modules (issue 31): a host build, a three-level fleet build and an x86-64-v2
build of ResNet-18 and MobileNetV2, side by side on this machine.

For each model (the seeded builders of ``tests/models/builders.py`` at ``--size``, fp32,
batch 1) and each build: the compile's wall seconds, the module folder's bytes, the
variant the loader picked (fleet module) and the median latency of ``--repeat`` runs at
one thread (interleaved rounds, all in one process, so the three are compared on the
same machine state). The reference is the host build: ``*_fleet_vs_host`` and
``*_v2_vs_host`` are latency, size and compile-time ratios against it.

Prints a table, then one JSON line of the figures (units in the names).

Usage: ``python bench/portable.py [--size 224] [--repeat 20] [--models resnet18,mobilenet_v2]``
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from compiler import build_model  # noqa: E402
from driver.runtime import load_module  # noqa: E402
from tests.models.builders import build_mobilenet_v2, build_resnet18  # noqa: E402
from vta_hw.host_cpu import best_level, read_os_flags  # noqa: E402

MODELS = {"resnet18": build_resnet18, "mobilenet_v2": build_mobilenet_v2}
#: build name -> target string
BUILDS = {"host": "llvm", "fleet": "llvm -mcpu=x86-64-v2,x86-64-v3,x86-64-v4",
          "v2": "llvm -mcpu=x86-64-v2"}


def folder_bytes(path: str) -> int:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def measure(name: str, size: int, repeat: int, tmp: str) -> dict:
    model = MODELS[name](size=size)
    x = np.random.default_rng(0).standard_normal((1, 3, size, size)).astype(np.float32)
    mods, out = {}, {}
    for build, target in BUILDS.items():
        t0 = time.perf_counter()
        cm = build_model(model, target=target)
        out[f"{name}_{build}_compile_s"] = round(time.perf_counter() - t0, 2)
        path = cm.save(os.path.join(tmp, f"{name}_{build}.vtamod"))
        out[f"{name}_{build}_module_mb"] = round(folder_bytes(path) / 1e6, 2)
        mods[build] = load_module(path)
        if build == "fleet":
            out[f"{name}_fleet_variant"] = mods[build].cpu_variant
    ref = mods["host"](x)[0]
    for build in ("fleet", "v2"):
        err = float(np.abs(mods[build](x)[0] - ref).max())
        out[f"{name}_{build}_max_abs_diff_vs_host"] = err
    times = {b: [] for b in mods}
    for _ in range(repeat):                       # interleaved: one call of each per round
        for build, m in mods.items():
            t = time.perf_counter()
            m(x)
            times[build].append(time.perf_counter() - t)
    for build in mods:
        out[f"{name}_{build}_ms"] = round(float(np.median(times[build])) * 1e3, 3)
    for build in ("fleet", "v2"):
        for what in ("ms", "module_mb", "compile_s"):
            out[f"{name}_{build}_vs_host_{what}"] = round(
                out[f"{name}_{build}_{what}"] / out[f"{name}_host_{what}"], 3)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=224, help="input height and width, pixels")
    ap.add_argument("--repeat", type=int, default=20, help="timed rounds per build")
    ap.add_argument("--models", default=",".join(MODELS), help="comma list of " + ", ".join(MODELS))
    args = ap.parse_args()
    from compiler.codegen.llvm.target import host_target
    figures = {"host_cpu": host_target().cpu, "host_level": best_level(read_os_flags()),
               "size_px": args.size, "threads": int(os.environ["OMP_NUM_THREADS"]),
               "load_avg_before": round(os.getloadavg()[0], 2)}
    with tempfile.TemporaryDirectory(prefix="portable_") as tmp:
        for name in args.models.split(","):
            figures.update(measure(name, args.size, args.repeat, tmp))
    figures["load_avg_after"] = round(os.getloadavg()[0], 2)
    print(f"{'model':<14}{'build':<7}{'compile s':>10}{'module MB':>11}{'latency ms':>12}")
    for name in args.models.split(","):
        for build in BUILDS:
            print(f"{name:<14}{build:<7}{figures[f'{name}_{build}_compile_s']:>10}"
                  f"{figures[f'{name}_{build}_module_mb']:>11}{figures[f'{name}_{build}_ms']:>12}"
                  + (f"  picked {figures[f'{name}_fleet_variant']}" if build == "fleet" else ""))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
