"""MobileNetV2 on 1 and 2 threads (issue 15): the depthwise layers' fork-joins.

Each depthwise layer used to open two parallel regions (the padded copy at the root, then
the conv over (n, channel, row)); on 2 threads a region can wake the second thread from a
futex sleep (once its bounded spin, ``driver/runtime/native.py``, has run out). The default now
runs one region per layer over (n, channel) with the padded copy made per task
(``par_depth`` 2). This builds MobileNetV2 (``tests/models/builders.py``, batch 1, fp32,
``--size``) twice, the default and with ``par_depth`` pinned to 3 on every workload (the
old depthwise schedule), and times both and onnxruntime in alternating rounds at each of
``--threads`` (a child process per thread count). Reported per build: the best latency
and the voluntary context switches per inference (``/proc/self/status``: each futex wake
of a worker shows as one), a count that load on the machine does not distort.

The last line is one JSON object of every figure (units in the names). Run:
``.venv/bin/python bench/mobilenet_threads.py [--threads 1,2] [--size 224]``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

from timing import child_figures, timed

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)


def _switches() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("voluntary_ctxt_switches"):
                return int(line.split()[1])
    return 0


def child(a, threads: int) -> dict:
    import numpy as np
    import onnx
    import onnxruntime as ort

    from compiler import build_model
    from compiler.autotune.pin import pin_log
    from driver.runtime import load_module
    from tests.models import builders
    fig: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench_mnv2_") as tmp:
        path = os.path.join(tmp, "mobilenet_v2.onnx")
        onnx.save(builders.build_mobilenet_v2(a.size), path)
        log = os.path.join(tmp, "par3.jsonl")
        pin_log(path, log, par_depth=3)
        mods = {"default": load_module(build_model(path)),
                "two_regions": load_module(build_model(path, tuning_log=log))}
        so = ort.SessionOptions()
        so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        (iname, ishape, idtype), = mods["default"].input_info()
        x = np.random.default_rng(0).standard_normal(ishape).astype(idtype)
        ref = sess.run(None, {iname: x})[0]
        times = {k: [] for k in mods}
        theirs, switches = [], {k: 0 for k in mods}
        for m in mods.values():
            m.set_input(iname, x)
        for _ in range(a.rounds):
            for k, m in mods.items():
                c0 = _switches()
                times[k] += timed(m.run, a.repeat)
                switches[k] += _switches() - c0
            theirs += timed(lambda: sess.run(None, {iname: x}), a.repeat)
        ort_s = min(theirs)
        pre = f"mobilenet_v2_t{threads}"
        fig[f"{pre}_ort_ms"] = round(ort_s * 1e3, 3)
        for k, m in mods.items():
            err = float(np.abs(m.get_output(0) - ref).max() / np.abs(ref).max())
            per_run = switches[k] / (a.rounds * (a.repeat + 2))
            print(f"mobilenet_v2 {threads}T {k:12s} {min(times[k]) * 1e3:8.2f} ms  vs onnxruntime "
                  f"{min(times[k]) / ort_s:5.2f}x  {per_run:6.1f} voluntary switches/run  "
                  f"(max rel err {err:.1e})", flush=True)
            fig.update({f"{pre}_{k}_ms": round(min(times[k]) * 1e3, 3),
                        f"{pre}_{k}_ratio_vs_ort": round(min(times[k]) / ort_s, 3),
                        f"{pre}_{k}_voluntary_switches_per_run": round(per_run, 1),
                        f"{pre}_{k}_max_rel_err": err})
    return fig


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", default="1,2")
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--repeat", type=int, default=30)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        print(json.dumps(child(a, a.child)))
        return
    print(f"load average before: {os.getloadavg()}", flush=True)
    fig: dict = {"size": a.size}
    for t in (int(s) for s in a.threads.split(",")):
        argv = [sys.executable, __file__, "--child", str(t), "--size", str(a.size),
                "--repeat", str(a.repeat), "--rounds", str(a.rounds)]
        fig.update(child_figures(argv, t))
    load = os.getloadavg()
    print(f"load average after: {load}", flush=True)
    fig["load_avg_1min_after"] = round(load[0], 2)
    print(json.dumps(fig))


if __name__ == "__main__":
    main()
