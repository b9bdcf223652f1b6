"""The SoC's RTL under Verilator, driven by the host driver over a UART model (cocotb).

One Verilator build and one simulator run per session and SoC (``soc_sim``
fixture): the small preset with its 16-entry command queues on a 32-bit bus,
and the 1x1 preset on an 8-bit bus (its block RAM moves each 32-bit host word
as four rows) with no command queues (depth 0, the rendezvous). Each test
below checks one cocotb test of ``soc_tb.py`` in its results file. The UART
runs at 8 clocks a bit so that a 1 KiB program loads in ~0.1 M cycles.
"""
from __future__ import annotations

import dataclasses
import json
import os
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from driver.rtl.build import build_root, verilator_on_path
from fpga.soc import soc_verilog
from vta_hw.config import load_config

HERE = Path(__file__).parent
JOB = {"mem_bytes": 4096, "clk_hz": 100_000_000, "divisor": 8}
#: (preset, CMD_QUEUE_DEPTH override or None)
SOCS = [("1x4_i8w8a32_10_10_10_11_bus32", 16), ("1x1_i8w8a32_10_9_9_11_bus8_cq0", None)]


@pytest.fixture(scope="session", params=SOCS, ids=["bus32-queues", "bus8-rendezvous"])
def soc_sim(request):
    """``{testcase name: failure message or None}`` of one run of ``soc_tb`` on a preset,
    its ``CMD_QUEUE_DEPTH`` replaced unless None."""
    from cocotb_tools.runner import get_runner
    verilator_on_path()
    preset, depth = request.param
    cfg = load_config(preset)
    if depth is not None:
        cfg = dataclasses.replace(cfg, CMD_QUEUE_DEPTH=depth)
    d = build_root() / "fpga_soc" / cfg.name
    d.mkdir(parents=True, exist_ok=True)
    src = d / "soc.v"
    text = soc_verilog(cfg, mem_bytes=JOB["mem_bytes"], clk_hz=JOB["clk_hz"],
                       divisor=JOB["divisor"])
    binary = d / "sim_build" / "soc"
    runner = get_runner("verilator")
    if not (binary.exists() and src.exists() and src.read_text() == text):
        src.write_text(text)
        old = os.environ.get("MAKEFLAGS")
        # as driver/rtl/build.py: the PyPI wheel needs the PCH flag on the make line
        os.environ["MAKEFLAGS"] = ((old + " ") if old else "") + \
            "CFG_CXXFLAGS_PCH_I=-include OPT_FAST=-O1 OPT_SLOW=-O0 OPT_GLOBAL=-O1"
        try:
            runner.build(sources=[src], hdl_toplevel="soc", build_dir=d / "sim_build",
                         build_args=["-Wno-fatal", "-Wno-lint", "-Wno-style"], always=True,
                         log_file=d / "build.log")
        finally:
            if old is None:
                os.environ.pop("MAKEFLAGS", None)
            else:
                os.environ["MAKEFLAGS"] = old
    else:
        runner._set_verilog_sources([])
        runner._set_vhdl_sources([])
        runner._set_sources([src])
    job = d / "job.json"
    job.write_text(json.dumps({"config": cfg.to_dict(), **JOB}))
    xml = d / "results.xml"
    xml.unlink(missing_ok=True)
    t0 = time.monotonic()
    try:
        runner.test(test_module="soc_tb", hdl_toplevel="soc", hdl_toplevel_lang="verilog",
                    build_dir=d / "sim_build", test_dir=d, log_file=d / "sim.log",
                    extra_env={"SOC_TB_JOB": str(job),
                               "PYTHONPATH": os.pathsep.join([str(HERE), *os.sys.path])},
                    results_xml=str(xml))
    except (SystemExit, Exception) as e:
        if not xml.exists():
            pytest.fail(f"SoC simulation failed to run: {e}; log: {d / 'sim.log'}")
    out = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        fail = case.find("failure")
        if fail is None:
            fail = case.find("error")
        out[case.get("name")] = None if fail is None else (fail.get("message") or "failed")
    out["_wall_s"] = time.monotonic() - t0
    out["_log"] = str(d / "sim.log")
    return out


@pytest.mark.parametrize("case", ["info", "memory_and_registers", "errors_get_status_replies",
                                  "gemm_matches_functional_sim"])
def test_soc_over_uart(soc_sim, case):
    assert case in soc_sim, f"cocotb test {case} did not run; log: {soc_sim['_log']}"
    assert soc_sim[case] is None, f"{case}: {soc_sim[case]}; log: {soc_sim['_log']}"
