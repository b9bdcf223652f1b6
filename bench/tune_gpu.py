"""GPU auto-tuning bench (issue 15): a tuning session of ResNet-18 on this machine's GPU
device (OpenCL, or CUDA where a GPU is), then the model built without and with the log,
timed alternately in one run.

Prints per task the default and tuned kernel times, then the end-to-end latency of the
untuned and tuned builds (best of ``--rounds`` alternating rounds of ``--repeat`` runs)
and their ratio; the tuned build's output is checked against the untuned one's (1e-4
relative). The load average is printed before and after. The last line is one JSON
object of every figure (units in the names).

Run: ``.venv/bin/python bench/tune_gpu.py [--target opencl|cuda] [--size 32] [--trials 8]``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="opencl", choices=["opencl", "cuda"])
    ap.add_argument("--size", type=int, default=32, help="ResNet-18 input size (pixels)")
    ap.add_argument("--trials", type=int, default=8, help="measured points per task at most")
    ap.add_argument("--strategy", default="xgb", choices=["xgb", "random"])
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    from compiler import build_model
    from driver.runtime import load_module
    from driver.tune.session import tune_model
    from tests.models import builders

    print(f"load average before: {os.getloadavg()[0]:.2f}")
    model = builders.build_resnet18(args.size)
    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, "gpu.jsonl")
        s = tune_model(model, log, target=args.target, trials=args.trials,
                       strategy=args.strategy, measure_model=False)
        for r in s.results:
            print(f"  {(r.task.name or r.task.key)[:36]:<36} x{r.task.weight}  default "
                  f"{r.default_cost * 1e6:9.1f} us  tuned {r.best_cost * 1e6:9.1f} us")
        plain = load_module(build_model(model, target=args.target))
        tuned_cm = build_model(model, target=args.target, tuning_log=log)
        tuned = load_module(tuned_cm)
    x = np.random.default_rng(0).standard_normal((1, 3, args.size, args.size)).astype("float32")
    a, b = plain(x)[0], tuned(x)[0]
    err = float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(a))), 1e-30))
    best_plain = best_tuned = float("inf")
    for _ in range(args.rounds):
        best_plain = min(best_plain, plain.benchmark(repeat=args.repeat)["median_s"])
        best_tuned = min(best_tuned, tuned.benchmark(repeat=args.repeat)["median_s"])
    print(f"end to end: untuned {best_plain * 1e3:.3f} ms, tuned {best_tuned * 1e3:.3f} ms "
          f"({best_tuned / best_plain:.3f}x); tuned vs untuned max error {err:.2e} (rel)")
    load = os.getloadavg()[0]
    print(f"load average after: {load:.2f}")
    print(json.dumps({
        "target": args.target, "size": args.size, "tasks": len(s.results),
        "trials_per_task": args.trials, "covered": tuned_cm.stats["tuning"]["covered"],
        "tasks_default_ms": round(s.tasks_default * 1e3, 4),
        "tasks_tuned_ms": round(s.tasks_tuned * 1e3, 4),
        "untuned_ms": round(best_plain * 1e3, 4), "tuned_ms": round(best_tuned * 1e3, 4),
        "tuned_over_untuned_ratio": round(best_tuned / best_plain, 4),
        "max_rel_error": err, "error_ok": err <= 1e-4, "load_avg_1min_after": round(load, 2)}))


if __name__ == "__main__":
    main()
