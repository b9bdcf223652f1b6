"""Accelerator parameters (``VTAConfig``) and every size derived from them.

The parameters are base-2 logarithms, as in TVM's VTA environment
(``vta/python/vta/environment.py``, TVM v0.18) and its ``vta_config.json``:

=====================  =======================================  =========
field                  meaning                                  default
=====================  =======================================  =========
``LOG_INP_WIDTH``      input value width, bits (3: int8)        3
``LOG_WGT_WIDTH``      weight value width, bits (3: int8)       3
``LOG_ACC_WIDTH``      accumulator width, bits (5: int32)       5
``LOG_BATCH``          rows of a GEMM tile (BATCH)              0
``LOG_BLOCK``          BLOCK_IN = BLOCK_OUT (BLOCK 1..64)       4
``LOG_UOP_BUFF_SIZE``  uop buffer, bytes                        15
``LOG_INP_BUFF_SIZE``  input buffer, bytes                      15
``LOG_WGT_BUFF_SIZE``  weight buffer, bytes                     18
``LOG_ACC_BUFF_SIZE``  accumulator buffer, bytes                17
``BUS_WIDTH``          memory port data width, bits (8..512)    64
``CMD_QUEUE_DEPTH``    entries of each command queue            16
=====================  =======================================  =========

``CMD_QUEUE_DEPTH`` is not a VTA parameter: it is the depth of the three
command queues between fetch and the load, compute and store modules
(``vta_hw.timing``: a dispatch waits while its queue holds that many
entries). Each entry is a 128-bit instruction held in flip-flops or block
RAM, so small FPGAs (the iCEBreaker's iCE40 UP5K, ``fpga.boards``) use
presets with shallow queues, or none: depth 0 is a rendezvous, fetch hands
an instruction straight to its module while that module is idle. The cycle
model (``sim.cycle``) and the RTL read the depth from the config, so cycle
counts stay equal for every depth.

One *element* of a buffer is what one SRAM entry holds: an INP element is
``BATCH x BLOCK_IN`` input values, a WGT element ``BLOCK_OUT x BLOCK_IN``
weights, an ACC element ``BATCH x BLOCK_OUT`` accumulators, an OUT element
``BATCH x BLOCK_OUT`` output values (output width = input width), a UOP
element one 32-bit micro-op. SRAM and DRAM addresses in instructions count
such elements. The OUT buffer has as many entries as the ACC buffer.

Every derived width is computed here and nowhere else.
"""
from __future__ import annotations

import dataclasses
import json
from functools import cached_property
from pathlib import Path

from vta_hw.timing import CMD_QUEUE_DEPTH
from vta_hw.errors import VtaError

PRESET_DIR = Path(__file__).parent / "presets"
DEFAULT_PRESET = "1x16_i8w8a32_15_15_18_17"

#: Instruction and uop word sizes, bits (VTA hardware spec).
INSN_BITS = 128
UOP_BITS = 32
#: Width of the opcode field (bits 2:0 of every instruction): at most 8 opcodes;
#: ``isa.Opcode`` uses 5.
OPCODE_BITS = 3
#: Width of the LOAD/STORE memory-id field: at most 8 memories; ``isa.MemId`` uses 5.
MEMOP_ID_BITS = 3
#: Width of the ALU opcode field (VTA: 3): it caps the ISA at 8 ALU ops; ``isa.AluOp``
#: uses 6 (MIN, MAX, ADD, SHR, MUL, REQUANT), so 2 more fit. A ninth needs a wider field, and on
#: the default preset the ALU's upper word is full (bits 64..127: factors, op, use_imm,
#: imm), so a factor or the immediate would have to shrink.
ALU_OPCODE_BITS = 3
#: Width of the GEMM/ALU loop-extent fields ``iter_out``/``iter_in`` (VTA: 14).
LOOP_ITER_BITS = 14
#: Width of the LOAD/STORE ``sram_base`` field (VTA: 16).
MEMOP_SRAM_BITS = 16
#: Width of the LOAD/STORE ``dram_base`` field (VTA: 32).
MEMOP_DRAM_BITS = 32
#: Width of ``y_size``, ``x_size`` and ``x_stride`` (VTA: 16).
MEMOP_SIZE_BITS = 16
#: Width of each of the four pad fields (VTA: 4).
MEMOP_PAD_BITS = 4
#: Width of the ALU immediate (signed, VTA: 16).
ALU_IMM_BITS = 16
#: The memory port data widths ``BUS_WIDTH`` may take, bits.
BUS_WIDTHS = (8, 16, 32, 64, 128, 256, 512)

_LIMITS = {
    # field: (min, max, why)
    "LOG_INP_WIDTH": (3, 3, "the datapath is built for int8 inputs"),
    "LOG_WGT_WIDTH": (3, 3, "the datapath is built for int8 weights"),
    "LOG_ACC_WIDTH": (5, 5, "the accumulators are int32"),
    "LOG_BATCH": (0, 4, "BATCH is 1..16"),
    "LOG_BLOCK": (0, 6, "BLOCK is 1..64"),
    "LOG_UOP_BUFF_SIZE": (4, 15, "the GEMM uop_bgn/uop_end fields hold at most 13 index bits"),
    "LOG_INP_BUFF_SIZE": (4, 24, "SRAM sizes are 16 B .. 16 MiB"),
    "LOG_WGT_BUFF_SIZE": (4, 24, "SRAM sizes are 16 B .. 16 MiB"),
    "LOG_ACC_BUFF_SIZE": (4, 24, "SRAM sizes are 16 B .. 16 MiB"),
    "CMD_QUEUE_DEPTH": (0, 64, "a command queue holds 1..64 instructions, "
                                 "0 is the rendezvous (no queue)"),
}


class ConfigError(VtaError, ValueError):
    """A ``VTAConfig`` field or preset is invalid; the message names it."""


@dataclasses.dataclass(frozen=True, slots=True)
class VTAConfig:
    """The accelerator parameters; see the module docstring for each field.

    Raises:
        ConfigError: a field is out of range, or a derived size breaks a rule
            (for example a weight tile larger than the weight buffer); the
            message names the field, the value and the rule.
    """

    LOG_INP_WIDTH: int = 3
    LOG_WGT_WIDTH: int = 3
    LOG_ACC_WIDTH: int = 5
    LOG_BATCH: int = 0
    LOG_BLOCK: int = 4
    LOG_UOP_BUFF_SIZE: int = 15
    LOG_INP_BUFF_SIZE: int = 15
    LOG_WGT_BUFF_SIZE: int = 18
    LOG_ACC_BUFF_SIZE: int = 17
    BUS_WIDTH: int = 64
    CMD_QUEUE_DEPTH: int = CMD_QUEUE_DEPTH

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if not isinstance(v, int) or isinstance(v, bool):
                raise ConfigError(f"{f.name} must be an int, not {v!r}")
        for name, (lo, hi, why) in _LIMITS.items():
            v = getattr(self, name)
            if not lo <= v <= hi:
                raise ConfigError(f"{name} must be in [{lo}, {hi}] ({why}), not {v}")
        if self.BUS_WIDTH not in BUS_WIDTHS:
            raise ConfigError(f"BUS_WIDTH must be one of {', '.join(map(str, BUS_WIDTHS))} bits, "
                              f"not {self.BUS_WIDTH}")
        for buf, elem in (("INP", self.inp_elem_bytes), ("WGT", self.wgt_elem_bytes),
                          ("ACC", self.acc_elem_bytes), ("UOP", self.uop_elem_bytes)):
            size = 1 << getattr(self, f"LOG_{buf}_BUFF_SIZE")
            if size < elem:
                raise ConfigError(
                    f"LOG_{buf}_BUFF_SIZE={getattr(self, f'LOG_{buf}_BUFF_SIZE')} gives a "
                    f"{size}-byte {buf} buffer, smaller than one {buf} element "
                    f"({elem} bytes for BATCH={self.BATCH}, BLOCK={self.BLOCK}); "
                    f"raise it to at least {elem.bit_length() - 1}")
        depth_bits = max(self.log_inp_depth, self.log_wgt_depth, self.log_acc_depth)
        if depth_bits > MEMOP_SRAM_BITS:
            raise ConfigError(
                f"an SRAM with 2**{depth_bits} entries needs more than the "
                f"{MEMOP_SRAM_BITS}-bit sram_base field; shrink the buffers")
        uop_sum = self.uop_dst_bits + self.uop_src_bits + self.uop_wgt_bits
        if uop_sum > UOP_BITS:
            raise ConfigError(
                f"uop fields need {uop_sum} bits (dst {self.uop_dst_bits} + src "
                f"{self.uop_src_bits} + wgt {self.uop_wgt_bits}) but a uop has {UOP_BITS}; "
                "shrink LOG_ACC_BUFF_SIZE, LOG_INP_BUFF_SIZE or LOG_WGT_BUFF_SIZE")
        hi = 2 * self.uop_dst_bits + 2 * self.uop_src_bits + 2 * self.uop_wgt_bits
        alu_hi = (2 * self.uop_dst_bits + 2 * self.uop_src_bits + ALU_OPCODE_BITS + 1
                  + ALU_IMM_BITS)
        if max(hi, alu_hi) > 64:
            raise ConfigError(
                f"GEMM/ALU loop factors need {max(hi, alu_hi)} bits but the upper "
                "instruction word has 64; shrink the SRAM buffers")

    # ---- values per element -------------------------------------------------
    @property
    def INP_WIDTH(self) -> int:
        return 1 << self.LOG_INP_WIDTH

    @property
    def WGT_WIDTH(self) -> int:
        return 1 << self.LOG_WGT_WIDTH

    @property
    def ACC_WIDTH(self) -> int:
        return 1 << self.LOG_ACC_WIDTH

    @property
    def OUT_WIDTH(self) -> int:
        return self.INP_WIDTH

    @property
    def BATCH(self) -> int:
        return 1 << self.LOG_BATCH

    @property
    def BLOCK(self) -> int:
        return 1 << self.LOG_BLOCK

    @property
    def BLOCK_IN(self) -> int:
        return self.BLOCK

    @property
    def BLOCK_OUT(self) -> int:
        return self.BLOCK

    # ---- element sizes, bytes -------------------------------------------------
    @property
    def inp_elem_bytes(self) -> int:
        return self.BATCH * self.BLOCK_IN * self.INP_WIDTH // 8

    @property
    def wgt_elem_bytes(self) -> int:
        return self.BLOCK_OUT * self.BLOCK_IN * self.WGT_WIDTH // 8

    @property
    def acc_elem_bytes(self) -> int:
        return self.BATCH * self.BLOCK_OUT * self.ACC_WIDTH // 8

    @property
    def out_elem_bytes(self) -> int:
        return self.BATCH * self.BLOCK_OUT * self.OUT_WIDTH // 8

    @property
    def uop_elem_bytes(self) -> int:
        return UOP_BITS // 8

    @property
    def bus_bytes(self) -> int:
        return self.BUS_WIDTH // 8

    def elem_bytes(self, mem: str) -> int:
        """Bytes of one element of buffer ``mem`` ("uop", "wgt", "inp", "acc", "out").

        Raises:
            ConfigError: ``mem`` is not a buffer name.
        """
        try:
            return {"uop": self.uop_elem_bytes, "wgt": self.wgt_elem_bytes,
                    "inp": self.inp_elem_bytes, "acc": self.acc_elem_bytes,
                    "out": self.out_elem_bytes}[mem.lower()]
        except KeyError:
            raise ConfigError(
                f"buffer must be one of uop, wgt, inp, acc, out, not {mem!r}") from None

    # ---- SRAM depths, entries, and index widths, bits -------------------------
    @property
    def log_uop_depth(self) -> int:
        return self.LOG_UOP_BUFF_SIZE - (self.uop_elem_bytes.bit_length() - 1)

    @property
    def log_inp_depth(self) -> int:
        return self.LOG_INP_BUFF_SIZE - (self.inp_elem_bytes.bit_length() - 1)

    @property
    def log_wgt_depth(self) -> int:
        return self.LOG_WGT_BUFF_SIZE - (self.wgt_elem_bytes.bit_length() - 1)

    @property
    def log_acc_depth(self) -> int:
        return self.LOG_ACC_BUFF_SIZE - (self.acc_elem_bytes.bit_length() - 1)

    @property
    def log_out_depth(self) -> int:
        return self.log_acc_depth

    @property
    def uop_depth(self) -> int:
        return 1 << self.log_uop_depth

    @property
    def inp_depth(self) -> int:
        return 1 << self.log_inp_depth

    @property
    def wgt_depth(self) -> int:
        return 1 << self.log_wgt_depth

    @property
    def acc_depth(self) -> int:
        return 1 << self.log_acc_depth

    @property
    def out_depth(self) -> int:
        return 1 << self.log_out_depth

    def depth(self, mem: str) -> int:
        """Entries of SRAM ``mem`` ("uop", "wgt", "inp", "acc", "out")."""
        self.elem_bytes(mem)  # validates the name
        return getattr(self, f"{mem.lower()}_depth")

    # ---- instruction field widths, bits -----------------------------------------
    @property
    def uop_dst_bits(self) -> int:
        """uop ``dst``: an ACC index."""
        return max(self.log_acc_depth, 1)

    @property
    def uop_src_bits(self) -> int:
        """uop ``src``: an INP index for GEMM, an ACC index for ALU."""
        return max(self.log_inp_depth, self.log_acc_depth, 1)

    @property
    def uop_wgt_bits(self) -> int:
        """uop ``wgt``: a WGT index."""
        return max(self.log_wgt_depth, 1)

    @property
    def uop_bgn_bits(self) -> int:
        return max(self.log_uop_depth, 1)

    @property
    def uop_end_bits(self) -> int:
        return self.uop_bgn_bits + 1

    # ---- naming and files --------------------------------------------------------
    @property
    def name(self) -> str:
        """Preset name as VTA's ``TARGET`` string, e.g. ``1x16_i8w8a32_15_15_18_17``.

        A non-default ``BUS_WIDTH`` is appended as ``_bus{bits}``, then a
        non-default ``CMD_QUEUE_DEPTH`` as ``_cq{entries}``.
        """
        base = (f"{self.BATCH}x{self.BLOCK}_i{self.INP_WIDTH}w{self.WGT_WIDTH}a{self.ACC_WIDTH}"
                f"_{self.LOG_UOP_BUFF_SIZE}_{self.LOG_INP_BUFF_SIZE}"
                f"_{self.LOG_WGT_BUFF_SIZE}_{self.LOG_ACC_BUFF_SIZE}")
        if self.BUS_WIDTH != 64:
            base += f"_bus{self.BUS_WIDTH}"
        if self.CMD_QUEUE_DEPTH != CMD_QUEUE_DEPTH:
            base += f"_cq{self.CMD_QUEUE_DEPTH}"
        return base

    @property
    def macs_per_cycle(self) -> int:
        """Peak multiply-accumulates per cycle of the GEMM core."""
        return self.BATCH * self.BLOCK_IN * self.BLOCK_OUT

    def to_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "VTAConfig":
        """Build from a dict of fields (a preset JSON object).

        Raises:
            ConfigError: unknown keys, or invalid values.
        """
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ConfigError(
                f"unknown config field(s) {', '.join(unknown)}; known: {', '.join(sorted(names))}")
        return cls(**d)

    @classmethod
    def from_json(cls, path: str | Path) -> "VTAConfig":
        """Read a config JSON file.

        Raises:
            ConfigError: unreadable file, bad JSON, unknown keys or invalid values.
        """
        try:
            d = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise ConfigError(f"cannot read config file {path}: {e}") from None
        if not isinstance(d, dict):
            raise ConfigError(f"config file {path} must hold a JSON object, not {type(d).__name__}")
        return cls.from_dict(d)


def preset_names() -> list[str]:
    """Names of the presets shipped in ``vta_hw/presets``."""
    return sorted(p.stem for p in PRESET_DIR.glob("*.json"))


def load_config(name_or_path: str | Path | None = None) -> VTAConfig:
    """Return a preset by name, or a config from a JSON file path.

    ``None`` gives the default preset (``1x16_i8w8a32_15_15_18_17``).

    Raises:
        ConfigError: no such preset or file; the message lists the presets.
    """
    if name_or_path is None:
        name_or_path = DEFAULT_PRESET
    p = Path(name_or_path)
    if p.suffix == ".json" and p.exists():
        return VTAConfig.from_json(p)
    if p.exists() and p.suffix != ".json":
        raise ConfigError(f"{str(name_or_path)!r} is a file but not a JSON config (*.json); give a "
                          f"preset name ({', '.join(preset_names())}) or a config .json file")
    preset = PRESET_DIR / f"{name_or_path}.json"
    if not preset.exists():
        raise ConfigError(
            f"no preset or config file named {str(name_or_path)!r}; "
            f"presets: {', '.join(preset_names())}")
    cfg = VTAConfig.from_json(preset)
    if cfg.name != preset.stem:
        raise ConfigError(f"preset file {preset.name} holds config {cfg.name}; rename it")
    return cfg
