"""The slowest path of a build, in words: from which register through which units to which.

nextpnr's ``--report`` JSON lists, per pair of clock edges, its critical path as
segments: ``clk-to-q`` (the launching flip-flop), ``logic`` (a cell: LUT, carry,
DSP), ``routing`` (a net) and ``setup`` (the capturing flip-flop), each with its
``delay`` in ns and the ``from``/``to`` cells. After Yosys flattens the design, cell
and net names are the Amaranth hierarchy joined by dots (``soc.vta.compute.core``)
and a signal name, with what techmapping appended (``_SB_DFFSR_Q_2_DFFLC``,
``_TRELLIS_FF_Q``, ``$abc$...``). ``register`` and ``unit`` undo that: a flip-flop's
cell gives the register (``soc.vta.compute.core.last_w``), a logic cell's name the
unit it sits in (``soc.vta.compute.core.alu``). Yosys names a LUT after the signal it
feeds, so a unit is where the logic's result goes, not always where its source
line is.

``describe(report, clock_net)`` returns, for the SoC clock's own critical path
(launched and captured by that clock):

    {"from": register, "to": register, "through": [units in path order],
     "logic_levels": n (logic segments), "logic_ns", "routing_ns", "delay_ns",
     "text": "from R (FF) through U1, U2 (n logic levels: a ns logic, b ns routing)
              to R2 (FF), d ns"}

or None when the report has no such path.
"""
from __future__ import annotations

import re

#: Where techmapping's suffix starts in a cell or net name: a primitive's name (iCE40,
#: ECP5, Xilinx), an auto-generated ``$`` name, or a bit index.
_TECH_SUFFIX = re.compile(r"_(?:SB_|TRELLIS_|LUT[1-6]|CCU2|MULT18|DP16|PFUMX|L6MUX|DFF|FD[RSCP]E)"
                          r"|\$|\[")


def _signal_path(cell: str) -> str | None:
    """``soc.vta.core.acc_SB_DFFSR_Q_2_DFFLC`` -> ``soc.vta.core.acc``; None for names
    Yosys made up (``$abc$123$...``), which say nothing about the hierarchy."""
    name = _TECH_SUFFIX.split(cell, maxsplit=1)[0]
    return name or None


def register(cell: str) -> str:
    """The register (hierarchy + signal) a flip-flop cell holds, or the cell name itself."""
    return _signal_path(cell) or cell


def unit(cell: str) -> str | None:
    """The Amaranth unit (hierarchy without the signal) a cell sits in; None if unnamed."""
    path = _signal_path(cell)
    if path is None or "." not in path:
        return None
    return path.rsplit(".", 1)[0]


def _clock_path(report: dict, clock_net: str) -> list | None:
    edge = f"posedge {clock_net}"
    paths = [p["path"] for p in report.get("critical_paths", [])
             if p.get("from") == edge and p.get("to") == edge and p.get("path")]
    return max(paths, key=lambda p: sum(s["delay"] for s in p)) if paths else None


def describe(report: dict, clock_net: str | None) -> dict | None:
    """The critical path of ``clock_net`` in nextpnr's ``--report`` dict, in words
    (module docstring); None when the report has none for that clock."""
    path = _clock_path(report, clock_net) if clock_net else None
    if path is None:
        return None
    src, dst = register(path[0]["from"]["cell"]), register(path[-1]["to"]["cell"])
    logic = [s for s in path if s["type"] == "logic"]
    through = []
    for s in logic:
        u = unit(s["to"]["cell"])
        if u is not None and u not in through:
            through.append(u)
    logic_ns = sum(s["delay"] for s in logic)
    routing_ns = sum(s["delay"] for s in path if s["type"] == "routing")
    delay_ns = sum(s["delay"] for s in path)
    via = ", ".join(through) or "unnamed logic"
    text = (f"from {src} (FF) through {via} ({len(logic)} logic levels: {logic_ns:.1f} ns "
            f"logic, {routing_ns:.1f} ns routing) to {dst} (FF), {delay_ns:.1f} ns")
    return {"from": src, "to": dst, "through": through, "logic_levels": len(logic),
            "logic_ns": round(logic_ns, 2), "routing_ns": round(routing_ns, 2),
            "delay_ns": round(delay_ns, 2), "text": text}
