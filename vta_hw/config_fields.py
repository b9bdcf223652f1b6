"""Every ``VTAConfig`` field with its range, default and meaning: what ``vta info`` and
``docs/config.md`` list. The ranges are ``vta_hw.config``'s own checks (``_LIMITS``,
``BUS_WIDTHS``), so this table cannot drift from what a config file may hold.
"""
from __future__ import annotations

import dataclasses

from vta_hw.config import _LIMITS, BUS_WIDTHS, VTAConfig

#: field -> what it sets (units in the text; LOG_* fields are base-2 logarithms)
MEANINGS = {
    "LOG_INP_WIDTH": "input value width, log2 bits (3: int8)",
    "LOG_WGT_WIDTH": "weight value width, log2 bits (3: int8)",
    "LOG_ACC_WIDTH": "accumulator width, log2 bits (5: int32)",
    "LOG_BATCH": "rows of a GEMM tile, log2 (BATCH = 2**LOG_BATCH)",
    "LOG_BLOCK": "BLOCK_IN = BLOCK_OUT, log2: a GEMM tile is BATCH x BLOCK by BLOCK x BLOCK",
    "LOG_UOP_BUFF_SIZE": "micro-op buffer, log2 bytes (4 bytes per uop)",
    "LOG_INP_BUFF_SIZE": "input buffer (INP SRAM), log2 bytes",
    "LOG_WGT_BUFF_SIZE": "weight buffer (WGT SRAM), log2 bytes",
    "LOG_ACC_BUFF_SIZE": "accumulator buffer (ACC SRAM, int32), log2 bytes; OUT has as many entries",
    "BUS_WIDTH": "memory port data width, bits (one beat)",
    "CMD_QUEUE_DEPTH": "entries of each fetch -> load/compute/store command queue "
                       "(0: no queue, a rendezvous); not a VTA parameter",
}


@dataclasses.dataclass(frozen=True)
class Field:
    name: str
    default: int
    allowed: str      # "3..3", "0..4", "one of 8, 16, ..."
    why: str          # the reason for the range
    meaning: str


def fields() -> list[Field]:
    """Every field of ``VTAConfig``, in declaration order."""
    out = []
    for f in dataclasses.fields(VTAConfig):
        if f.name == "BUS_WIDTH":
            allowed, why = "one of " + ", ".join(map(str, BUS_WIDTHS)), "a power-of-two port"
        else:
            lo, hi, why = _LIMITS[f.name]
            allowed = f"{lo}..{hi}"
        out.append(Field(f.name, f.default, allowed, why, MEANINGS[f.name]))
    return out


def markdown() -> str:
    """The fields as a Markdown table (``docs/config.md`` holds it; a test keeps them equal)."""
    lines = ["| field | default | range | why the range | meaning |", "|---|---|---|---|---|"]
    lines += [f"| `{f.name}` | {f.default} | {f.allowed} | {f.why} | {f.meaning} |" for f in fields()]
    return "\n".join(lines)


def table(cfg: VTAConfig | None = None) -> list[str]:
    """Text lines: each field's value in ``cfg`` (else its default), range and meaning."""
    rows = []
    for f in fields():
        v = getattr(cfg, f.name) if cfg is not None else f.default
        rows.append(f"  {f.name:<18} {v:>4}   range {f.allowed:<37} {f.meaning}")
    return rows
