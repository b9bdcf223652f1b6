"""The RTLIL of every design the repository builds, and a sha256 of each: to show that a
refactor left the hardware alone.

Designs: the accelerator (``vta_hw.rtl.VTA``, default ``RtlParams``) for every preset,
and the SoC of every board (``fpga.top.BoardTop``'s, with that board's burst and
address parameters) for each preset the board builds (``fits`` and ``smallest``).
Amaranth's RTLIL (``amaranth.back.rtlil``, no source locations) is what it hands to
Yosys for Verilog, so equal RTLIL gives equal Verilog and an equal netlist; it takes
about a minute for all of them, the Verilog through YoWASP's Yosys much longer.

Usage: ``python tools/netlist_fingerprint.py OUT_DIR [NAME_FILTER ...]`` in each of two
checkouts (``PYTHONPATH=<checkout>``), then ``diff`` the printed lines (or ``cmp`` the
``.il`` files in the two ``OUT_DIR``).
"""
from __future__ import annotations

import hashlib
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from amaranth.back import rtlil  # noqa: E402

from fpga.boards import BOARDS  # noqa: E402
from fpga.top import BoardTop  # noqa: E402
from vta_hw.config import load_config, preset_names  # noqa: E402
from vta_hw.rtl.top import VTA  # noqa: E402


def designs():
    """``(name, elaboratable, top-level module name)`` for every design."""
    for p in preset_names():
        yield f"vta_{p}", VTA(load_config(p)), "vta"
    for b in BOARDS.values():
        for p in sorted(set(b.fits) | {b.smallest}):
            yield f"soc_{b.name}_{p}", BoardTop(b, load_config(p), b.clock_mhz * 1e6).soc, "soc"


def main(argv=None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        raise SystemExit(__doc__.split("\n\n")[-1])
    out, only = Path(args[0]), args[1:]
    out.mkdir(parents=True, exist_ok=True)
    warnings.simplefilter("ignore")
    for name, design, top in designs():
        if only and not any(o in name for o in only):
            continue
        text = rtlil.convert(design, name=top, emit_src=False)
        (out / f"{name}.il").write_text(text)
        print(name, hashlib.sha256(text.encode()).hexdigest(), flush=True)


if __name__ == "__main__":
    main()
