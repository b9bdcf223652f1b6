"""Run programs on the RTL and hold them to ``sim.functional`` (and record cycles).

``check(cfg, jobs, labels, timing)`` runs every ``(program, image)`` in one
simulator invocation, compares each final DRAM image with ``sim.functional``'s
run of that program (each starts from zeroed SRAMs: ``driver.rtl.clear``), writes the cycle counts to
``build/rtl/cycles/<config>.<tag>.json`` and, on a mismatch, reruns the
programs up to the first failing one with a waveform so the report names it.
"""
from __future__ import annotations

import json

from driver.rtl import run_programs
from driver.rtl.build import build_root
from driver.rtl.reference import mismatch_report
from sim import functional
from vta_hw.timing import DramTiming

SMALL = "1x4_i8w8a32_10_10_10_11_bus32"
MID = "1x8_i8w8a32_11_12_13_14"
DEFAULT = "1x16_i8w8a32_15_15_18_17"
#: BLOCK=1 on an 8-bit bus (the iCEBreaker's candidate): every element and instruction is
#: assembled from, or split into, byte beats.
NARROW = "1x1_i8w8a32_10_9_9_11_bus8_cq0"


def record_cycles(cfg, tag: str, labels, results, timing: DramTiming) -> None:
    d = build_root() / "cycles"
    d.mkdir(parents=True, exist_ok=True)
    rows = [{"program": lab, "cycles": r.cycles, "busy": r.busy} for lab, r in zip(labels, results)]
    (d / f"{cfg.name}.{tag}.json").write_text(json.dumps(
        {"config": cfg.name, "dram_timing": {"latency": timing.latency,
                                             "bytes_per_cycle": timing.bytes_per_cycle,
                                             "max_burst_beats": timing.max_burst_beats,
                                             "page_bytes": timing.page_bytes},
         "runs": rows}, indent=1))


def check(cfg, jobs, labels, timing: DramTiming | None = None, tag: str = "runs"):
    """Returns the ``RtlResult`` list; fails the test on any DRAM mismatch."""
    timing = timing or DramTiming()
    jobs = [(p, p.dram_image() if img is None else img) for p, img in jobs]
    want = [functional.run(p, img) for p, img in jobs]
    got = run_programs(cfg, jobs, timing)
    record_cycles(cfg, tag, labels, got, timing)
    reports = [mismatch_report(p, g.dram, w.dram, label=lab)
               for (p, _), g, w, lab in zip(jobs, got, want, labels)]
    bad = [k for k, r in enumerate(reports) if r]
    if bad:
        first = bad[0]
        traced = run_programs(cfg, jobs[:first + 1], timing, vcd=True)
        msg = mismatch_report(jobs[first][0], traced[-1].dram, want[first].dram,
                              vcd=traced[-1].vcd, label=labels[first])
        raise AssertionError(f"{len(bad)} of {len(jobs)} programs differ from sim.functional; "
                             f"first: {msg}")
    return got
