"""Do a sibling CPU's shipped tuning records beat the untuned defaults on this machine?
(issue 31)

For ResNet-18 and MobileNetV2 (``tests/models/builders.py``, batch 1, fp32, ``--size``
px: the shipped CPU logs cover 224, other sizes meet none of their workloads), at 1
thread, builds each model for two targets that run here:

* this machine (``llvm``), and
* a 256-bit build (``--avx2-target``, default ``llvm -mcpu=x86-64-v3``: AVX2, FMA, no
  VNNI), whose ISA class is that of the AVX2 logs (``cpu_znver1.jsonl``), if this
  machine runs AVX2 code,

each with: (a) no tuning log at all (the untuned defaults; the shipped folder
emptied), (b) the shipped records of the target's ISA class from *other* CPUs only
(exact-target records left out: what a sibling machine gets), (c) the shipped records
of the exact target only, where there are any. ``compiler.autotune.isa_class`` decides
what is exact and what a sibling.

Latency is the best of ``--rounds`` interleaved rounds of ``--repeat`` runs, by wall
time and by the thread's CPU time (``_cpu`` figures: steady on a loaded machine, which
this bench reports with the load average). Every variant's output is checked against
(a)'s (max error relative to max|default|, must be <= 1e-4). Prints per model and target
each variant's milliseconds, covered workloads and where they came from, then ONE line:
a JSON object of every figure (units in the names; ratios are variant / default by
thread CPU time; a variant that no shipped record covers is left out).

Usage: ``python bench/sibling_logs.py [--size 224] [--repeat 10] [--rounds 3]``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

os.environ["OMP_NUM_THREADS"] = "1"     # before libgomp starts: one thread throughout
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "models"))

from builders import build_mobilenet_v2, build_resnet18  # noqa: E402
from timing import timed, timed_thread_cpu  # noqa: E402

from compiler.autotune import apply, target_record  # noqa: E402
from compiler.autotune.isa_class import describe_class, exact_key, isa_class  # noqa: E402
from compiler.autotune.record import read_records  # noqa: E402
from compiler.codegen.llvm.target import parse_target  # noqa: E402

MODELS = {"resnet18": build_resnet18, "mobilenetv2": build_mobilenet_v2}
#: allowed max error of a tuned build against the untuned one, relative to max|default|
MAX_REL_ERR = 1e-4


def split_shipped(shipped: Path, target: str, prefix: str) -> dict:
    """variant -> a log (written to ``prefix`` + variant + ``.jsonl``) of the shipped records
    (every ``*.jsonl`` of ``shipped``)
    for ``target``: ``"sibling"`` (its ISA class, other CPUs or code features) and
    ``"exact"`` (its exact target); a variant with no record is left out."""
    here = target_record(parse_target(target))
    recs = [r for p in sorted(shipped.glob("*.jsonl")) for r in read_records(p)]
    parts = {"exact": [r for r in recs if exact_key(r.target) == exact_key(here)],
             "sibling": [r for r in recs if exact_key(r.target) != exact_key(here)
                         and isa_class(r.target) is not None
                         and isa_class(r.target) == isa_class(here)]}
    out = {}
    for name, rs in parts.items():
        if rs:
            out[name] = f"{prefix}{name}.jsonl"
            Path(out[name]).write_text("".join(r.to_json() + "\n" for r in rs))
    return out


def measure(path: str, target: str, logs: dict, repeat: int, rounds: int) -> dict:
    """variant -> (best wall s, best thread CPU s, tuning stats, max rel err vs default)."""
    import numpy as np

    from compiler import build_model
    from driver.runtime import load_module
    mods = {"default": load_module(build_model(path, target=target))}
    stats = {"default": {}}
    for name, log in logs.items():
        cm = build_model(path, target=target, tuning_log=log)
        mods[name], stats[name] = load_module(cm), cm.stats["tuning"]
    (iname, ishape, idtype), = mods["default"].input_info()
    x = np.random.default_rng(0).standard_normal(ishape).astype(idtype)
    outs = {}
    for name, m in mods.items():
        m.set_input(iname, x)
        m.run()
        outs[name] = m.get_output(0).copy()
    wall = {n: [] for n in mods}
    cpu = {n: [] for n in mods}
    for _ in range(rounds):
        for n, m in mods.items():
            wall[n] += timed(m.run, repeat)
            cpu[n] += timed_thread_cpu(m.run, repeat)
    ref = outs["default"]
    return {n: (min(wall[n]), min(cpu[n]), stats[n],
                float(np.abs(outs[n] - ref).max() / np.abs(ref).max())) for n in mods}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--avx2-target", default="llvm -mcpu=x86-64-v3")
    a = ap.parse_args()
    import onnx

    from vta_hw.host_cpu import missing, read_os_flags
    targets = {"host": "llvm"}
    if not missing(parse_target(a.avx2_target).features.split(","), read_os_flags()):
        targets["avx2"] = a.avx2_target
    print(f"load average before: {os.getloadavg()}", flush=True)
    figures: dict = {}
    failed = []
    shipped = apply.SHIPPED_DIR
    with tempfile.TemporaryDirectory() as tmp:
        apply.SHIPPED_DIR = Path(tmp) / "no_shipped_logs"     # (a): none; (b), (c): given
        for label, target in targets.items():
            cls = describe_class(isa_class(target_record(parse_target(target))))
            cpu = parse_target(target).cpu
            logs = split_shipped(shipped, target, os.path.join(tmp, label) + "_")
            for model, build in MODELS.items():
                path = os.path.join(tmp, f"{model}.onnx")
                if not os.path.exists(path):
                    onnx.save(build(a.size), path)
                res = measure(path, target, logs, a.repeat, a.rounds)
                print(f"{model} {a.size}px, {target} ({cpu}; {cls}), 1 thread:", flush=True)
                base = res["default"][1]
                for n, (wall, tcpu, st, err) in res.items():
                    src = "" if n == "default" else (
                        f"; {st['covered']} of {st['workloads']} workloads covered" +
                        "".join(f", {k} from {c}" for c, k in st.get("sibling", {}).items()))
                    print(f"  {n:8s} {wall * 1e3:8.2f} ms  thread CPU {tcpu * 1e3:8.2f} ms "
                          f"({tcpu / base:.3f}x default){src}; max error {err:.1e}", flush=True)
                    figures[f"{model}_{label}_{n}_ms"] = round(wall * 1e3, 3)
                    figures[f"{model}_{label}_{n}_cpu_ms"] = round(tcpu * 1e3, 3)
                    if n != "default":
                        figures[f"{model}_{label}_ratio_{n}_vs_default"] = round(tcpu / base, 3)
                        figures[f"{model}_{label}_{n}_covered_workloads"] = st["covered"]
                    if err > MAX_REL_ERR:
                        failed.append(f"{model} {label} {n}: max error {err:.1e}")
                if "sibling" not in logs:
                    print(f"  sibling: no shipped record of class {cls} from another CPU",
                          flush=True)
    print(f"load average after: {os.getloadavg()}", flush=True)
    if failed:
        raise SystemExit("outputs disagree with the untuned build: " + "; ".join(failed))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
