"""Graph tuner bench (issue 15): ResNet-18's conv layouts chosen over the whole graph.

Tunes ResNet-18 (``tests/models/builders.py``, batch 1, fp32, ``--size``) from an empty
log at 1 thread with ``--trials`` per task: the per-task stage (NCHW convs), then the
layout stage (every conv in each candidate NCHW{b}c layout, every layout transform a
choice could need, the dynamic program; ``compiler.autotune.layout_stage``). Prints the
estimated totals (sum of the chosen layers' best measured times plus the transforms
the choice implies): every conv in its own fastest layout, the DP's choice, and all
NCHW. Then builds the model three ways from the same log (the DP's layouts, the
per-layer-best layouts, all NCHW) and measures each end to end, best of ``--rounds``
interleaved rounds of ``--repeat`` runs, checking each against onnxruntime (1e-4).

The load average is printed before and after (timings on a loaded machine are not
figures). The last line is one JSON object (units in the names).

Run: ``.venv/bin/python bench/graph_tuning.py [--size 224] [--trials 8] [--log LOG]``; smoke:
``--size 32 --trials 2 --repeat 5 --rounds 3``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

from timing import timed

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)


def _with_layouts(log, stage_key, target, layouts, path):
    """A copy of ``log``'s trials with ``layouts`` as the decision (None: no decision)."""
    from compiler.autotune.record import LayoutRecord, TuningLog, read_log
    out = TuningLog(path)
    for r in read_log(log)["trial"]:
        out.append(r)
    if layouts is not None:
        out.append(LayoutRecord(stage_key, target, [tuple(c) for c in layouts]))
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--trials", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--log", help="keep the tuning log here (an existing one is resumed)")
    a = ap.parse_args()
    os.environ["OMP_NUM_THREADS"] = "1"
    import numpy as np
    import onnx
    import onnxruntime as ort

    from compiler import build_model
    from driver.runtime import load_module
    from driver.tune.session import tune_model
    from tests.models import builders
    print(f"load average before: {os.getloadavg()}", flush=True)
    fig = {"model": "resnet18", "size": a.size, "trials_per_task": a.trials}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "resnet18.onnx")
        onnx.save(builders.build_resnet18(a.size), path)
        log = a.log or os.path.join(tmp, "t.jsonl")
        s = tune_model(path, log, trials=a.trials, threads=1, measure_model=False)
        rec = s.layout
        e = rec.estimate
        fig.update(est_per_layer_best_ms=round(e["per_layer_best_s"] * 1e3, 4),
                   est_dp_ms=round(e["dp_s"] * 1e3, 4),
                   est_all_nchw_ms=round(e["default_s"] * 1e3, 4),
                   dp_exact=e["exact"], dp_transforms=e["transforms"],
                   dp_blocked_convs=sum(1 for ib, _ in rec.layouts if ib), convs=len(rec.layouts))
        print(f"DP layouts: {rec.layouts}", flush=True)
        logs = {"dp": log,
                "per_layer_best": _with_layouts(log, rec.graph, rec.target, e["per_layer_best"],
                                                os.path.join(tmp, "plb.jsonl")),
                "all_nchw": _with_layouts(log, rec.graph, rec.target, None,
                                          os.path.join(tmp, "nchw.jsonl"))}
        x = np.random.default_rng(0).standard_normal((1, 3, a.size, a.size)).astype(np.float32)
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        want = sess.run(None, {"input": x})[0]
        mods = {}
        for name, lg in logs.items():
            cm = build_model(path, tuning_log=lg)
            m = load_module(cm)
            m.set_input("input", x)
            m.run()
            err = float(np.max(np.abs(m.get_output(0) - want)) / np.max(np.abs(want)))
            assert err <= 1e-4, f"{name}: max error {err:.3g} relative to max|expected|"
            mods[name] = m
            fig[f"{name}_transforms"] = cm.stats["layout_transforms"]
        best = {name: float("inf") for name in mods}
        for _ in range(a.rounds):                     # interleaved rounds, best of
            for name, m in mods.items():
                best[name] = min(best[name], min(timed(m.run, a.repeat)))
            best["ort"] = min(best.get("ort", float("inf")),
                              min(timed(lambda: sess.run(None, {"input": x}), a.repeat)))
        for name, t in best.items():
            fig[f"measured_{name}_ms"] = round(t * 1e3, 4)
        fig["measured_dp_vs_all_nchw"] = round(best["dp"] / best["all_nchw"], 3)
        fig["measured_dp_vs_per_layer_best"] = round(best["dp"] / best["per_layer_best"], 3)
    fig["load_avg_1min_after"] = round(os.getloadavg()[0], 2)
    print(f"load average after: {os.getloadavg()}", flush=True)
    print(json.dumps(fig))


if __name__ == "__main__":
    main()
