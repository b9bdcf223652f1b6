"""What the bf16 accuracy rule costs: fp32, all-bf16 and the rule's mixed bf16 builds of the
bench models, timed interleaved in one run, with their cosine to fp32.

``build_model(model, dtype="bfloat16")`` keeps the shortest prefix of bf16-able layers fp32
that its emulation needs (``compiler.graph_lower.bf16_accuracy``); "all bf16" marks every
layer (``mark_bf16`` on the batch-norm-folded graph, built as a graph). Seeded random
weights, 224 x 224 by default, batch 1, one thread; the input is not the one the rule's
emulation ran on. The machine's load average is printed first: on a shared machine the
figures are rough. The last line is one JSON object (``*_ms``: best of the rounds in
milliseconds, ``*_cos``: cosine to fp32, ``*_ratio``: against fp32's ms in the same run).

Run: ``.venv/bin/python bench/bf16_mixed.py [--size 224] [--models mobilenet_v2,resnet18]``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

os.environ["OMP_NUM_THREADS"] = "1"            # before libgomp starts: one thread for all
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

from timing import timed  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--models", default="mobilenet_v2,resnet18")
    args = ap.parse_args()

    import numpy as np

    from compiler import build_model
    from compiler.frontend import import_model
    from compiler.graph import optimize
    from compiler.graph_lower.bf16 import mark_bf16
    from driver.runtime import load_module
    from tests.models import builders

    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs; "
          f"batch 1, {args.size}x{args.size}, 1 thread")
    figures = {"size": args.size, "load_avg_1min": round(load[0], 2)}
    x = np.random.default_rng(11).standard_normal((1, 3, args.size, args.size)).astype(np.float32)
    for name in args.models.split(","):
        model = getattr(builders, f"build_{name}")(args.size)
        folded = optimize(*import_model(model), fuse=False, verify=False)
        rule = build_model(model, dtype="bfloat16")
        mods = {"fp32": load_module(build_model(model)),
                "bf16_all": load_module(build_model(mark_bf16(folded.graph), params=folded.params)),
                "bf16_rule": load_module(rule)}
        outs = {k: np.asarray(m(x)[0], np.float64).ravel() for k, m in mods.items()}
        times = {k: [] for k in mods}
        for _ in range(args.rounds):
            for k, m in mods.items():
                times[k] += timed(lambda m=m: m(x), args.repeat)
        st = rule.stats["bf16"]
        print(f"{name}: the rule keeps {st['fp32_prefix']} of {st['candidates']} layers fp32 "
              f"({', '.join(st['fp32_layers']) or 'none'})")
        figures[f"{name}_rule_fp32_layers"] = st["fp32_prefix"]
        for k in mods:
            ms = min(times[k]) * 1e3
            figures[f"{name}_{k}_ms"] = round(ms, 3)
            a, b = outs[k], outs["fp32"]
            cos = float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
            line = f"  {k:10s} {ms:8.2f} ms"
            if k != "fp32":
                figures[f"{name}_{k}_cos"] = round(cos, 6)
                figures[f"{name}_{k}_vs_fp32_ratio"] = round(ms / figures[f"{name}_fp32_ms"], 3)
                line += f"  cosine to fp32 {cos:.6f}"
            print(line)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
