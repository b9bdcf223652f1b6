"""``run_programs``: many programs in one Verilator run, results per program."""
from __future__ import annotations

import dataclasses
import os
import pickle
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from driver.rtl.build import TOPLEVEL, build_model, build_root
from driver.rtl.clear import clear_program
from driver.rtl.faults import raise_fault
from driver.rtl.runner import verilator_runner
from vta_hw.config import VTAConfig
from vta_hw.program import Program
from vta_hw.rtl.top import RtlParams
from vta_hw.timing import DramTiming
from vta_hw.errors import VtaError
from vta_hw.tool import ToolTimeout

#: Default cycle limit per program.
MAX_CYCLES = 2_000_000
#: Default wall-time limit of one simulator run (all its programs), seconds
#: (``vta_hw.tool``; ``$VTA_TOOL_TIMEOUT_S`` replaces it).
SIM_LIMIT_S = 1800.0


class RtlError(VtaError, RuntimeError):
    """The RTL simulation did not produce results (crash, timeout, memory errors)."""


@dataclasses.dataclass
class RtlResult:
    """One program's outcome on the RTL.

    Attributes:
        dram: final DRAM image (uint8, same size as the input image).
        cycles: the CYCLES register: cycles from start to FINISH's retire, inclusive.
        busy: cycles each module (fetch, load, compute, store) was not idle.
        vcd: path of the waveform of the run, when ``vcd=True``.
        bursts: every burst on the memory port: (cycle accepted, counted from the
            start cycle 0; byte address; beats; write).
        wall_s: wall seconds of the whole simulator invocation (shared by its programs).
    """
    dram: np.ndarray
    cycles: int
    busy: dict[str, int]
    vcd: Path | None = None
    wall_s: float = 0.0
    bursts: list = dataclasses.field(default_factory=list)


def run_programs(cfg: VTAConfig, jobs, dram_timing: DramTiming | None = None, *,
                 vcd: bool = False, max_cycles: int = MAX_CYCLES,
                 workdir: str | Path | None = None,
                 timeout_s: float = SIM_LIMIT_S,
                 stop_file: str | Path | None = None) -> list[RtlResult]:
    """Run ``jobs`` (``[(program, dram_image), ...]``) on the RTL of ``cfg``, back to back.

    A program is a ``Program`` or the path of a program file (``.vtaprog``).

    One simulator process runs them all, without reset between programs, and is
    killed after ``timeout_s`` wall seconds. Before each program the SRAMs are
    zeroed (``driver.rtl.clear``, a program of its own whose cycles are not
    counted), so every program starts as in the simulators (the SRAM contract,
    ``vta_hw.isa``).
    The Verilator model is built once per config and burst rules (cached,
    see ``driver.rtl.build``). ``dram_image`` may be None (the program's own).
    Creating ``stop_file`` (a path) while a program runs stops the simulation
    within ``driver.rtl.tb.POLL_CYCLES`` cycles (an ``RtlError`` "stopped by the host").

    Raises:
        UnknownOpcodeError, CycleDeadlockError (``sim``): the RTL ended a program on
            an error status (an undefined instruction; no progress), reported as the
            simulators report it (``driver.rtl.faults``).
        RtlError: a program timed out (``max_cycles``), the simulator ran past
            ``timeout_s``, a program touched memory outside its image, or the
            simulator failed; the message says which program and where the log is.
        ValueError: a program's config differs from ``cfg``, or its
            ``insn_base`` is not aligned to 16 bytes and the bus width.
    """
    dram_timing = dram_timing or DramTiming()
    params = RtlParams.from_timing(dram_timing)
    progs = []
    jobs = [(Program.load(p) if isinstance(p, (str, Path)) else p, img) for p, img in jobs]
    for k, (program, image) in enumerate(jobs):
        if program.config != cfg:
            raise ValueError(f"program {k} is for config {program.config.name}, not {cfg.name}")
        if program.insn_base % max(16, cfg.bus_bytes):
            raise ValueError(f"program {k}: insn_base {program.insn_base} must be a multiple of "
                             f"{max(16, cfg.bus_bytes)} bytes")
        img = program.dram_image() if image is None else np.asarray(image, np.uint8)
        progs.append({"insn_base": program.insn_base, "insn_count": len(program.insns),
                      "dram": img})
    clear = clear_program(cfg)
    clear_job = {"insn_base": clear.insn_base, "insn_count": len(clear.insns),
                 "dram": clear.dram_image()}
    # the SRAM contract: each program starts from zeroed SRAMs (driver.rtl.clear)
    runs = [job for prog in progs for job in (clear_job, prog)]
    bdir = build_model(cfg, params, trace=vcd)
    if workdir is None:
        (build_root() / "runs").mkdir(parents=True, exist_ok=True)
        workdir = tempfile.mkdtemp(prefix=f"{cfg.name}_", dir=build_root() / "runs")
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    job, out = workdir / "job.pkl", workdir / "results.pkl"
    out.unlink(missing_ok=True)
    with open(job, "wb") as f:
        pickle.dump({"timing": dram_timing, "bus_bytes": cfg.bus_bytes,
                     "max_cycles": max_cycles, "programs": runs,
                     "stop_file": None if stop_file is None else str(stop_file)}, f)
    runner = verilator_runner(timeout_s, f"RTL simulation of {cfg.name}")
    # test() reads the source lists that build() sets; the model is built (and
    # cached) by build_model, so set them here instead of building again.
    runner._set_verilog_sources([])
    runner._set_vhdl_sources([])
    runner._set_sources([bdir / f"{TOPLEVEL}.v"])
    log = workdir / "sim.log"
    t0 = time.monotonic()
    try:
        runner.test(test_module="driver.rtl.tb", hdl_toplevel=TOPLEVEL, hdl_toplevel_lang="verilog",
                    build_dir=bdir / "sim_build", test_dir=workdir, waves=vcd,
                    extra_env={"VTA_TB_JOB": str(job), "VTA_TB_RESULTS": str(out)},
                    log_file=log, results_xml=str(workdir / "results.xml"))
    except ToolTimeout as e:
        raise RtlError(f"{e}; log: {log}") from None
    except (SystemExit, Exception) as e:
        raise RtlError(f"RTL simulation of {cfg.name} failed: {e}; log: {log}") from None
    wall = time.monotonic() - t0
    if not out.exists():
        raise RtlError(f"RTL simulation of {cfg.name} produced no results; log: {log}")
    with open(out, "rb") as f:
        raw = pickle.load(f)
    wave = None
    if vcd and (workdir / "dump.vcd").exists():
        wave = workdir / "run.vcd"
        shutil.move(workdir / "dump.vcd", wave)
    results = []
    for j, r in enumerate(raw):
        k = j // 2
        if j % 2 == 0:  # the SRAM clear before program k
            if r.get("fault") or r["error"] or r["errors"]:
                raise RtlError(f"the SRAM clear before program {k} of {len(progs)} on "
                               f"{cfg.name} failed ({r.get('fault') or r['error'] or r['errors']})"
                               f"; an RTL bug; log: {log}")
            continue
        if r.get("fault"):
            program, _ = jobs[k]
            raise_fault(r["fault"], program, progs[k]["dram"],
                        f"program {k} of {len(progs)} on {cfg.name}", RtlError)
        if r["error"] or r["errors"]:
            msgs = ([r["error"]] if r["error"] else []) + r["errors"][:5]
            raise RtlError(f"program {k} of {len(progs)} on {cfg.name}: {'; '.join(msgs)} "
                           f"(log: {log}{', waveform: ' + str(wave) if wave else ''})")
        results.append(RtlResult(r["dram"], r["cycles"], r["busy"], wave, wall, r["bursts"]))
    if len(results) != len(progs):
        raise RtlError(f"RTL simulation of {cfg.name} stopped after {len(results)} of "
                       f"{len(progs)} programs; log: {log}")
    if not os.environ.get("VTA_RTL_KEEP_RUNS") and not vcd:
        shutil.rmtree(workdir, ignore_errors=True)
    return results
