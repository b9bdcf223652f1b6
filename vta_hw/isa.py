"""The instruction set: typed records, and their 128-bit / 32-bit encodings.

Layouts follow the VTA hardware spec (``vta/include/vta/hw_spec.h`` in TVM,
v0.18); field widths that depend on SRAM depths come from ``VTAConfig``, so
the layout of the upper word changes with the preset while instructions stay
128 bits and uops 32 bits. Bit 0 is the least significant. On the default
preset the layout is the table in DESIGN.md.

Records (all frozen):

- ``Load`` / ``Store``: a 2-D strided DMA between DRAM and an SRAM. Addresses
  count *elements* of the buffer ``mem`` (see ``vta_hw.config``). ``x_size == 0``
  is a token-only no-op.
- ``Gemm``: ``for o < iter_out, for i < iter_in, for u in [uop_bgn, uop_end)``:
  ``acc[dst] += inp[src] . wgt[wgt]^T`` with ``dst = uop.dst + o*dst_factor_out
  + i*dst_factor_in`` (likewise ``src``, ``wgt``); ``reset`` writes zeros.
- ``Alu``: the same loops, ``acc[dst] = op(acc[dst], imm if use_imm else acc[src])``;
  ``REQUANT`` instead writes OUT (the requantized int8 value) and zeros ACC
  (``vta_hw.alu``).
- ``Finish``: raises done.
- ``Uop``: ``dst`` (ACC index), ``src`` (INP index for GEMM, ACC for ALU), ``wgt``.

Every instruction carries the dependency flags ``pop_prev``, ``pop_next``,
``push_prev``, ``push_next`` (see ``vta_hw.timing`` and ``sim.functional``).

Routing and tokens (DESIGN.md, "Four modules"), the one copy that the
simulators, the compiler and the RTL's fetch read: ``module_of(insn)`` says
which module runs an instruction (LOADs of ``LOAD_MODULE_MEMS`` on load,
STOREs on store, every other instruction on compute), ``FLAG_QUEUES`` which
token queue each (module, flag) pair pops or pushes, and ``LINKS`` the same
table per (producer, consumer) pair:

  ========  ==========  ==========  ===========  ===========
  module    pop_prev    pop_next    push_prev    push_next
  ========  ==========  ==========  ===========  ===========
  load      (none)      pops c2l    (none)       pushes l2c
  compute   pops l2c    pops s2c    pushes c2l   pushes c2s
  store     pops c2s    (none)      pushes s2c   (none)
  ========  ==========  ==========  ===========  ===========

Undefined behaviour, and what each execution (``sim.functional``, ``sim.cycle``,
the RTL under ``driver.rtl``, a board) does about it:

- **SRAM contract**: a program reads only SRAM entries it has written itself
  (a LOAD writes its whole padded block, a GEMM/ALU its ``dst`` entries in ACC
  and OUT; a uop range, GEMM ``src``/``wgt``, a non-reset ``dst``, an ALU
  ``src``, and STORE's OUT entries are reads). What an SRAM holds before the
  program's first write is zero on the simulators and on the RTL, where
  ``driver.rtl.run_programs`` runs a clearing program (``driver.rtl.clear``,
  its cycles not counted) before each program, so the three executions agree;
  a board keeps the previous program's contents (the fpga backend does not
  clear: that would cost a transfer of the uop SRAM's size over the UART per
  run). The simulators track every entry and report a read of an unwritten
  one with its instruction index (``sim.errors.UnwrittenReadWarning``; with
  ``strict_sram=True`` an ``UnwrittenReadError``). Every program the compiler
  emits follows the rule (checked for its conv2d/dense kernels on the small,
  1x8 and default presets, the te conv2d with and without requantization, the
  digits model and ResNet-18; ``tests/compiler/test_sram_contract.py`` keeps it so):
  partial tiles read only lanes the same program loaded or padded.
- **Undefined encodings**: an unknown opcode, a LOAD/STORE whose memory id
  ``MemId`` does not define, or an ALU whose opcode ``AluOp`` does not define
  (6..7; the fields of ``ENUM_FIELDS``), is an ``UnknownOpcodeError`` at that
  instruction in the simulators (before anything runs); the RTL (its fetch is
  elaborated for the config, so it knows where each field sits) never
  dispatches it, ends the run with the ERROR status ``ERR_UNDEFINED`` and the
  instruction's index (``vta_hw.rtl.control``), which ``driver.rtl`` and the
  fpga backend (registers 8 and 9 through the bridge) report as the same error.
- **Deadlock**: every execution applies the config's command-queue depth and
  ``timing.TOKEN_QUEUE_DEPTH``; the simulators raise ``DeadlockError`` naming
  each blocked module's instruction and queue; the RTL ends a run in which no
  module progresses for ``NO_PROGRESS_CYCLES`` cycles (``ERR_NO_PROGRESS``) and
  ``driver.rtl`` reports it with the cycle model's states.

Field-width limits (``vta_hw.config``): the opcode, memory-id and ALU-opcode
fields are 3 bits each, so the ISA holds at most 8 opcodes (5 used), 8
memories (5 used) and 8 ALU ops (6 used); this module refuses an enum that
outgrows its field at import.
"""
from __future__ import annotations

import dataclasses
import enum
from functools import lru_cache

from vta_hw.config import (ALU_IMM_BITS, ALU_OPCODE_BITS, INSN_BITS,
                           LOOP_ITER_BITS, MEMOP_DRAM_BITS, MEMOP_ID_BITS, MEMOP_PAD_BITS,
                           MEMOP_SIZE_BITS, MEMOP_SRAM_BITS, OPCODE_BITS, UOP_BITS, VTAConfig)
from vta_hw.errors import VtaError


class Opcode(enum.IntEnum):
    LOAD = 0
    STORE = 1
    GEMM = 2
    FINISH = 3
    ALU = 4


class MemId(enum.IntEnum):
    UOP = 0
    WGT = 1
    INP = 2
    ACC = 3
    OUT = 4


class AluOp(enum.IntEnum):
    MIN = 0
    MAX = 1
    ADD = 2
    SHR = 3  # arithmetic shift right; a negative amount shifts left
    MUL = 4
    REQUANT = 5  # OUT = clip((acc + b) >> imm[4:0]) to int8 (imm[5]: relu); ACC = 0 (vta_hw.alu)


for _enum, _bits in ((Opcode, OPCODE_BITS), (MemId, MEMOP_ID_BITS), (AluOp, ALU_OPCODE_BITS)):
    if max(_enum) >= 1 << _bits:
        raise AssertionError(f"{_enum.__name__} has {max(_enum) + 1} codes, more than its "
                             f"{_bits}-bit field holds; widen the field in vta_hw/config.py")


class DecodeError(VtaError, ValueError):
    """A word does not decode to an instruction (unknown opcode, memory id, ALU op)."""


@dataclasses.dataclass(frozen=True, slots=True)
class _Deps:
    pop_prev: bool = False
    pop_next: bool = False
    push_prev: bool = False
    push_next: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class _MemOp(_Deps):
    """Fields shared by LOAD and STORE (a 2-D strided DMA)."""
    mem: MemId = MemId.INP
    sram_base: int = 0
    dram_base: int = 0
    y_size: int = 0
    x_size: int = 0
    x_stride: int = 0
    y_pad_0: int = 0
    y_pad_1: int = 0
    x_pad_0: int = 0
    x_pad_1: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class Load(_MemOp):
    """DRAM -> SRAM ``mem``: ``y_size`` rows of ``x_size`` elements, rows
    ``x_stride`` elements apart in DRAM, zero padding added on each side in SRAM."""
    opcode = Opcode.LOAD


@dataclasses.dataclass(frozen=True, slots=True)
class Store(_MemOp):
    """OUT SRAM -> DRAM: ``y_size`` rows of ``x_size`` elements, ``x_stride`` apart in DRAM."""
    mem: MemId = MemId.OUT
    opcode = Opcode.STORE


@dataclasses.dataclass(frozen=True, slots=True)
class _UopLoops(_Deps):
    """Fields shared by GEMM and ALU: the uop range and the two loops over it."""
    reset: bool = False
    uop_bgn: int = 0
    uop_end: int = 0
    iter_out: int = 0
    iter_in: int = 0
    dst_factor_out: int = 0
    dst_factor_in: int = 0
    src_factor_out: int = 0
    src_factor_in: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class Gemm(_UopLoops):
    """``acc[dst] += inp[src] . wgt[wgt]^T`` over two loops and a uop range."""
    wgt_factor_out: int = 0
    wgt_factor_in: int = 0
    opcode = Opcode.GEMM


@dataclasses.dataclass(frozen=True, slots=True)
class Alu(_UopLoops):
    """``acc[dst] = op(acc[dst], imm or acc[src])`` over two loops and a uop range."""
    alu_op: AluOp = AluOp.ADD
    use_imm: bool = False
    imm: int = 0
    opcode = Opcode.ALU


@dataclasses.dataclass(frozen=True, slots=True)
class Finish(_Deps):
    """End of the program: compute raises done."""
    opcode = Opcode.FINISH


@dataclasses.dataclass(frozen=True, slots=True)
class Uop:
    """One micro-op: ACC index ``dst``, INP (GEMM) or ACC (ALU) index ``src``, WGT index ``wgt``."""
    dst: int = 0
    src: int = 0
    wgt: int = 0


Insn = Load | Store | Gemm | Alu | Finish

# ---- routing and dependency tokens (module docstring) ----------------------------------
#: The modules that execute instructions, in fetch's dispatch order.
MODULES = ("load", "compute", "store")
#: The four one-bit token queues: load->compute, compute->load, compute->store, store->compute.
QUEUES = ("l2c", "c2l", "c2s", "s2c")
POP_FLAGS = ("pop_prev", "pop_next")
PUSH_FLAGS = ("push_prev", "push_next")
DEP_FLAGS = POP_FLAGS + PUSH_FLAGS
#: (module, flag) -> the token queue it pops or pushes, as the hardware wires them; a pair
#: missing here is a flag that module does not have (a bad program).
FLAG_QUEUES = {
    ("load", "pop_next"): "c2l", ("load", "push_next"): "l2c",
    ("compute", "pop_prev"): "l2c", ("compute", "pop_next"): "s2c",
    ("compute", "push_prev"): "c2l", ("compute", "push_next"): "c2s",
    ("store", "pop_prev"): "c2s", ("store", "push_prev"): "s2c",
}
#: (producer, consumer) -> (queue, the producer's push flag, the consumer's pop flag), from
#: ``FLAG_QUEUES``. Load and store have no queue between them.
LINKS = {(pm, cm): (q, pf, cf)
         for (pm, pf), q in FLAG_QUEUES.items() if pf in PUSH_FLAGS
         for (cm, cf), q2 in FLAG_QUEUES.items() if cf in POP_FLAGS and q2 == q}
#: LOADs of these memories run on the load module; LOADs of the others on compute.
LOAD_MODULE_MEMS = (MemId.INP, MemId.WGT)


def module_of(insn: "Insn") -> str:
    """The module that executes ``insn``: "load" (LOAD of INP/WGT), "store" (STORE) or
    "compute" (LOAD of UOP/ACC, GEMM, ALU, FINISH)."""
    if isinstance(insn, Store):
        return "store"
    if isinstance(insn, Load) and insn.mem in LOAD_MODULE_MEMS:
        return "load"
    return "compute"
KINDS: dict[Opcode, type] = {Opcode.LOAD: Load, Opcode.STORE: Store, Opcode.GEMM: Gemm,
                             Opcode.ALU: Alu, Opcode.FINISH: Finish}
#: Fields whose values are an enum; any other value is undefined (the simulators reject
#: it, the RTL's fetch ends the run on it).
ENUM_FIELDS = {"mem": MemId, "alu_op": AluOp}
_BOOL_FIELDS = {"pop_prev", "pop_next", "push_prev", "push_next", "reset", "use_imm"}
_SIGNED_FIELDS = {"imm"}


@dataclasses.dataclass(frozen=True)
class Field:
    """One bit field: ``name`` at bits ``[lsb, lsb + width)``."""
    name: str
    lsb: int
    width: int

    @property
    def msb(self) -> int:
        return self.lsb + self.width - 1


def _pack(fields: list[tuple[str, int]], start: int) -> list[Field]:
    out, pos = [], start
    for name, width in fields:
        if name:
            out.append(Field(name, pos, width))
        pos += width
    return out


@lru_cache(maxsize=None)
def layout(opcode: Opcode, cfg: VTAConfig) -> tuple[Field, ...]:
    """Bit fields of instruction kind ``opcode`` on config ``cfg``, LSB first.

    The lower word holds opcode, dependency flags and the kind's first fields
    from bit 7; the upper word (from bit 64) the rest, as in VTA.
    """
    common = [("opcode", OPCODE_BITS)] + [(flag, 1) for flag in DEP_FLAGS]
    if opcode in (Opcode.LOAD, Opcode.STORE):
        lo = [("mem", MEMOP_ID_BITS), ("sram_base", MEMOP_SRAM_BITS), ("dram_base", MEMOP_DRAM_BITS)]
        hi = [("y_size", MEMOP_SIZE_BITS), ("x_size", MEMOP_SIZE_BITS),
              ("x_stride", MEMOP_SIZE_BITS), ("y_pad_0", MEMOP_PAD_BITS),
              ("y_pad_1", MEMOP_PAD_BITS), ("x_pad_0", MEMOP_PAD_BITS),
              ("x_pad_1", MEMOP_PAD_BITS)]
    elif opcode in (Opcode.GEMM, Opcode.ALU):
        lo = [("reset", 1), ("uop_bgn", cfg.uop_bgn_bits), ("uop_end", cfg.uop_end_bits),
              ("iter_out", LOOP_ITER_BITS), ("iter_in", LOOP_ITER_BITS)]
        hi = [("dst_factor_out", cfg.uop_dst_bits), ("dst_factor_in", cfg.uop_dst_bits),
              ("src_factor_out", cfg.uop_src_bits), ("src_factor_in", cfg.uop_src_bits)]
        if opcode == Opcode.GEMM:
            hi += [("wgt_factor_out", cfg.uop_wgt_bits), ("wgt_factor_in", cfg.uop_wgt_bits)]
        else:
            hi += [("alu_op", ALU_OPCODE_BITS), ("use_imm", 1), ("imm", ALU_IMM_BITS)]
    elif opcode == Opcode.FINISH:
        lo, hi = [], []
    else:
        raise DecodeError(f"opcode must be one of {[o.name for o in Opcode]}, not {opcode!r}")
    fields = _pack(common + lo, 0) + _pack(hi, 64)
    assert all(f.msb < INSN_BITS for f in fields)
    assert sum(w for _, w in common + lo) <= 64
    return tuple(fields)


@lru_cache(maxsize=None)
def uop_layout(cfg: VTAConfig) -> tuple[Field, ...]:
    """Bit fields of a uop on config ``cfg``: dst, src, wgt from bit 0."""
    return tuple(_pack([("dst", cfg.uop_dst_bits), ("src", cfg.uop_src_bits),
                        ("wgt", cfg.uop_wgt_bits)], 0))


def _put(word: int, f: Field, value: int, what: str) -> int:
    v = int(value)
    if f.name in _SIGNED_FIELDS:
        lo, hi = -(1 << (f.width - 1)), (1 << (f.width - 1)) - 1
        if not lo <= v <= hi:
            raise ValueError(f"{what}.{f.name} is a signed {f.width}-bit field "
                             f"({lo}..{hi}); {v} does not fit")
        v &= (1 << f.width) - 1
    elif not 0 <= v < (1 << f.width):
        raise ValueError(f"{what}.{f.name} is a {f.width}-bit field "
                         f"(0..{(1 << f.width) - 1}); {v} does not fit")
    return word | (v << f.lsb)


def _get(word: int, f: Field) -> int:
    v = (word >> f.lsb) & ((1 << f.width) - 1)
    if f.name in _SIGNED_FIELDS and v >> (f.width - 1):
        v -= 1 << f.width
    return v


def encode(insn: Insn, cfg: VTAConfig) -> int:
    """Encode ``insn`` to a 128-bit integer.

    Raises:
        ValueError: a field value does not fit its width on ``cfg``; the
            message names the field, its width and the value.
    """
    what = type(insn).__name__
    word = 0
    for f in layout(insn.opcode, cfg):
        value = insn.opcode if f.name == "opcode" else getattr(insn, f.name)
        word = _put(word, f, value, what)
    return word


def decode(word: int, cfg: VTAConfig) -> Insn:
    """Decode a 128-bit integer to an instruction record.

    Raises:
        DecodeError: unknown opcode, memory id or ALU opcode.
    """
    if not 0 <= word < (1 << INSN_BITS):
        raise DecodeError(f"an instruction is {INSN_BITS} bits; {word:#x} is out of range")
    raw = word & ((1 << OPCODE_BITS) - 1)
    try:
        opcode = Opcode(raw)
    except ValueError:
        raise DecodeError(f"unknown opcode {raw} (known: "
                          f"{', '.join(f'{o.name}={o.value}' for o in Opcode)})") from None
    kwargs = {}
    for f in layout(opcode, cfg):
        if f.name == "opcode":
            continue
        v = _get(word, f)
        if f.name in ENUM_FIELDS:
            enum_t = ENUM_FIELDS[f.name]
            try:
                v = enum_t(v)
            except ValueError:
                raise DecodeError(f"{KINDS[opcode].__name__}: unknown {f.name} {v} (known: "
                                  f"{', '.join(f'{e.name}={e.value}' for e in enum_t)})") from None
        elif f.name in _BOOL_FIELDS:
            v = bool(v)
        kwargs[f.name] = v
    return KINDS[opcode](**kwargs)


def encode_uop(uop: Uop, cfg: VTAConfig) -> int:
    """Encode a uop to a 32-bit integer.

    Raises:
        ValueError: an index does not fit its field on ``cfg``.
    """
    word = 0
    for f in uop_layout(cfg):
        word = _put(word, f, getattr(uop, f.name), "Uop")
    return word


def decode_uop(word: int, cfg: VTAConfig) -> Uop:
    """Decode a 32-bit integer to a ``Uop``."""
    if not 0 <= word < (1 << UOP_BITS):
        raise DecodeError(f"a uop is {UOP_BITS} bits; {word:#x} is out of range")
    return Uop(**{f.name: _get(word, f) for f in uop_layout(cfg)})


def insn_to_bytes(word: int) -> bytes:
    """A 128-bit instruction word as 16 little-endian bytes (its DRAM form)."""
    return word.to_bytes(INSN_BITS // 8, "little")


def insn_from_bytes(data: bytes) -> int:
    return int.from_bytes(data, "little")


def describe(insn: Insn) -> str:
    """One readable line: opcode, dependency flags, then every field.

    Example: ``LOAD  INP  deps=--/pn  sram=0 dram=64 y=1 x=4 stride=4 pad=0,0,0,0``.
    """
    flags = ("pp" if insn.pop_prev else "--") + ("pn" if insn.pop_next else "--")
    pushes = ("Pp" if insn.push_prev else "--") + ("Pn" if insn.push_next else "--")
    head = f"{insn.opcode.name:<6} "
    if isinstance(insn, (Load, Store)):
        body = (f"{insn.mem.name:<4} sram={insn.sram_base} dram={insn.dram_base} "
                f"y={insn.y_size} x={insn.x_size} stride={insn.x_stride} "
                f"pad=y{insn.y_pad_0},{insn.y_pad_1}/x{insn.x_pad_0},{insn.x_pad_1}")
    elif isinstance(insn, (Gemm, Alu)):
        body = (f"{'reset ' if insn.reset else ''}uop=[{insn.uop_bgn},{insn.uop_end}) "
                f"iter={insn.iter_out}x{insn.iter_in} "
                f"dst={insn.dst_factor_out},{insn.dst_factor_in} "
                f"src={insn.src_factor_out},{insn.src_factor_in}")
        if isinstance(insn, Gemm):
            body += f" wgt={insn.wgt_factor_out},{insn.wgt_factor_in}"
        else:
            operand = f"imm={insn.imm}" if insn.use_imm else "src"
            body = f"{insn.alu_op.name:<4} {operand} " + body
    else:
        body = ""
    return f"{head}deps={flags}/{pushes} {body}".rstrip()
