"""Ship a CPU tuning log: the records of ``vta tune`` logs that beat the default point.

For each record of the given logs (``vta tune MODEL -o LOG``, which measures every task's
default point first, in the same session) whose target is this machine's
(``compiler.autotune.isa_class.exact_key``), keeps per workload the lowest-cost record,
and only if it beat the default point measured in the same log on that workload by
more than ``--min-gain`` (default 3%: a margin over run-to-run noise on a loaded
machine, so a tie measured as a win is not shipped): a record whose config is the
default point, or whose cost is not below ``(1 - min_gain)`` x the default's, is
dropped (a shipped record must never lose to the untuned build on its workload;
issue 31). A session measures a task's default point once, in its first round, and the
rest minutes later under another load, so each remaining record is then measured again
against the default point here, interleaved (``--rounds`` rounds of the pair, one
thread, ``driver.tune.LocalRunner``), and kept only if its fastest run beats the default's
fastest by the same margin. Writes ``compiler/autotune/logs/cpu_<LLVM cpu>.jsonl`` (or
``-o``) and prints, per workload, the session's and the second measurement's milliseconds
of the default and the best point, then one JSON line (records kept and dropped).

The default point of a workload is its task's ``space.default``; the tasks come from
the ``--models`` the logs were tuned for (``tests/models/builders.py`` names at
``--size`` px, fp32, batch 1), so a workload of another model is dropped too.

Usage: ``python bench/ship_cpu_log.py LOG [LOG...] [--models resnet18,mobilenetv2]
[--size 224] [--min-gain 0.03] [--rounds 3] [-o OUT]``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "models"))

from builders import build_mobilenet_v2, build_resnet18  # noqa: E402

from compiler.autotune import extract_tasks, target_record  # noqa: E402
from compiler.autotune.apply import SHIPPED_DIR  # noqa: E402
from compiler.autotune.isa_class import exact_key  # noqa: E402
from compiler.autotune.record import read_records  # noqa: E402
from compiler.codegen.llvm.target import parse_target  # noqa: E402
from driver.tune import LocalRunner  # noqa: E402

#: model name -> builder(size) of ``tests/models/builders.py``
MODELS = {"resnet18": build_resnet18, "mobilenetv2": build_mobilenet_v2}


def tasks(models, size: int) -> dict:
    """Workload key -> this machine's task of it, for ``models`` at ``size`` px."""
    import onnx
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in models:
            path = os.path.join(tmp, f"{name}.onnx")
            onnx.save(MODELS[name](size), path)
            out.update({t.key: t for t in extract_tasks(path, "llvm")})
    return out


def remeasure(runner, task, config, rounds: int) -> tuple:
    """(fastest seconds of the default point, of ``config``) over ``rounds`` interleaved
    measurements of the pair; inf for a point that fails."""
    best = [math.inf, math.inf]
    for _ in range(rounds):
        for i, res in enumerate(runner.measure(task, [task.space.default, config])):
            best[i] = min([best[i]] + list(res.costs)) if not res.error else math.inf
    return tuple(best)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", nargs="+")
    ap.add_argument("--models", default="resnet18,mobilenetv2")
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--min-gain", type=float, default=0.03)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("-o", "--output")
    a = ap.parse_args()
    here = target_record(parse_target("llvm"))
    out = Path(a.output or SHIPPED_DIR / f"cpu_{here['cpu']}.jsonl")
    found = tasks(a.models.split(","), a.size)
    default = {k: dict(t.space.default.values) for k, t in found.items()}
    recs = [r for p in a.logs for r in read_records(p)
            if exact_key(r.target) == exact_key(here) and r.key in default and not r.error
            and r.costs]
    kept, dropped = [], 0
    for key, values in default.items():
        mine = [r for r in recs if r.key == key]
        base = [r.cost for r in mine if _is(r.config, values)]
        if not mine or not base:
            continue
        best = min(mine, key=lambda r: r.cost)
        name = key.split("(")[0]
        if _is(best.config, values) or best.cost >= (1 - a.min_gain) * min(base):
            dropped += 1
            print(f"  dropped {name}: best {best.cost * 1e3:.3f} ms against the default's "
                  f"{min(base) * 1e3:.3f} ms")
            continue
        with LocalRunner(threads=1, build_jobs=0) as runner:
            again = remeasure(runner, found[key], found[key].space.point(**best.config_values()),
                              a.rounds)
        if again[1] >= (1 - a.min_gain) * again[0]:
            dropped += 1
            print(f"  dropped {name}: {min(base) * 1e3:.3f} -> {best.cost * 1e3:.3f} ms in the "
                  f"session, measured again {again[0] * 1e3:.3f} -> {again[1] * 1e3:.3f} ms")
            continue
        kept.append(best)
        print(f"  kept    {name}: {min(base) * 1e3:.3f} ms default -> {best.cost * 1e3:.3f} ms, "
              f"measured again {again[0] * 1e3:.3f} -> {again[1] * 1e3:.3f} ms", flush=True)
    out.write_text("".join(r.to_json() + "\n" for r in kept))
    print(f"wrote {out}: {len(kept)} records ({dropped} dropped: "
          f"not {a.min_gain:.0%} better than the default)")
    print(json.dumps({"kept_records": len(kept), "dropped_records": dropped}))


def _is(config: dict, values: dict) -> bool:
    """Whether a record's ``config`` (JSON: lists) is the point ``values`` (tuples)."""
    return json.dumps(config, sort_keys=True) == json.dumps(values, sort_keys=True)


if __name__ == "__main__":
    main()
