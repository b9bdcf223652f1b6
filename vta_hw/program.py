"""Program container: instruction stream + uop buffer + the DRAM image it expects.

A ``Program`` is what the compiler emits and what every backend (functional
simulator, cycle simulator, RTL, FPGA board) runs. It places everything in
one flat DRAM image of ``dram_bytes`` bytes:

- named data buffers (``BufferSpec``: byte offset, shape, dtype, kind), each
  aligned to ``alignment(cfg)`` bytes so that any buffer can be addressed in
  elements of any SRAM (instructions count elements, not bytes);
- the uop buffer at ``uop_base`` (bytes), 32-bit little-endian words;
- the instruction stream at ``insn_base`` (bytes), 128-bit little-endian words.

The file format (``.vtaprog``) and its checks live in ``vta_hw/program_file.py``;
``Program.save`` and ``Program.load`` use it.
"""
from __future__ import annotations

import dataclasses
import os
import tempfile
from pathlib import Path

import numpy as np

from vta_hw import isa, program_file
from vta_hw.config import VTAConfig
from vta_hw.errors import ArgumentError
from vta_hw.program_file import BUFFER_KINDS, FORMAT_VERSION, MAGIC, ProgramFormatError

__all__ = ["BUFFER_KINDS", "FORMAT_VERSION", "MAGIC", "BufferSpec", "DramLayout", "Program",
           "ProgramFormatError", "alignment"]


@dataclasses.dataclass(frozen=True)
class BufferSpec:
    """A named region of the DRAM image.

    Attributes:
        name: unique name.
        offset: first byte in the DRAM image (aligned to ``alignment(cfg)``).
        shape: array shape as stored (packed layouts included), elements.
        dtype: numpy dtype name, e.g. "int8", "int32".
        kind: one of "input", "output", "param", "scratch".
        data: initial contents (params, example inputs), or None.
    """
    name: str
    offset: int
    shape: tuple[int, ...]
    dtype: str
    kind: str = "scratch"
    data: np.ndarray | None = dataclasses.field(default=None, compare=False, repr=False)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


def alignment(cfg: VTAConfig) -> int:
    """Byte alignment of every DRAM region: the largest element or bus beat, at least 64."""
    return max(64, cfg.bus_bytes, cfg.inp_elem_bytes, cfg.wgt_elem_bytes,
               cfg.acc_elem_bytes, cfg.out_elem_bytes)


def _align(n: int, a: int) -> int:
    return -(-n // a) * a


class DramLayout:
    """Allocates a program's DRAM regions; ``finish`` turns them into a ``Program``.

    Usage: ``alloc`` each data buffer, ``alloc_uops`` (its result is the uop
    base in uop elements, for ``Load(mem=UOP, dram_base=...)``), build the
    instructions, then ``finish(insns, uops)``.
    """

    def __init__(self, cfg: VTAConfig):
        self.cfg = cfg
        self.buffers: list[BufferSpec] = []
        self._top = 0
        self._uop_base: int | None = None
        self._uop_count = 0

    def alloc(self, name: str, shape, dtype: str, kind: str = "scratch",
              data: np.ndarray | None = None) -> BufferSpec:
        """Reserve a buffer; returns its spec (``offset`` in bytes).

        Raises:
            ArgumentError: duplicate name, unknown kind, or data of another shape.
        """
        if any(b.name == name for b in self.buffers):
            raise ArgumentError(f"buffer {name!r} is already allocated; names must be unique")
        if kind not in BUFFER_KINDS:
            raise ArgumentError(f"buffer {name!r}: kind must be one of {BUFFER_KINDS}, not {kind!r}")
        shape = tuple(int(s) for s in shape)
        if data is not None:
            data = np.ascontiguousarray(data, dtype=dtype)
            if data.shape != shape:
                raise ArgumentError(f"buffer {name!r}: data has shape {data.shape}, expected {shape}")
        spec = BufferSpec(name, _align(self._top, alignment(self.cfg)), shape,
                          np.dtype(dtype).name, kind, data)
        self._top = spec.offset + spec.nbytes
        self.buffers.append(spec)
        return spec

    def elem(self, spec: BufferSpec, mem: str) -> int:
        """``spec``'s offset in elements of SRAM ``mem`` (for an instruction's dram_base)."""
        return spec.offset // self.cfg.elem_bytes(mem)

    def alloc_uops(self, n: int) -> int:
        """Reserve room for ``n`` uops; returns the uop base in uop elements."""
        base = _align(self._top, alignment(self.cfg))
        self._uop_base = base
        self._uop_count = n
        self._top = base + 4 * n
        return base // 4

    def finish(self, insns: list, uops: list) -> "Program":
        """The program: uops at the reserved base, instructions after them."""
        uop_base = self._uop_base if self._uop_base is not None else self.alloc_uops(len(uops)) * 4
        if (uop_base + 4 * len(uops) > _align(self._top, 4)
                or len(uops) > self._uop_count):
            raise ArgumentError(f"{len(uops)} uops do not fit the space reserved by alloc_uops")
        insn_base = _align(self._top, alignment(self.cfg))
        dram_bytes = _align(insn_base + 16 * len(insns), alignment(self.cfg))
        return Program(self.cfg, list(insns), list(uops), list(self.buffers),
                       insn_base=insn_base, uop_base=uop_base, dram_bytes=dram_bytes)


@dataclasses.dataclass
class Program:
    """An instruction stream, its uops and its DRAM layout (see module docstring)."""
    config: VTAConfig
    insns: list
    uops: list
    buffers: list[BufferSpec]
    insn_base: int
    uop_base: int
    dram_bytes: int

    def buffer(self, name: str) -> BufferSpec:
        """The buffer called ``name``.

        Raises:
            KeyError: no such buffer; the message lists the names.
        """
        for b in self.buffers:
            if b.name == name:
                return b
        raise KeyError(f"program has no buffer {name!r}; buffers: "
                       f"{', '.join(b.name for b in self.buffers) or '(none)'}")

    def insn_bytes(self) -> bytes:
        """Instructions as 16-byte little-endian words (raises ValueError if a field overflows)."""
        return b"".join(isa.insn_to_bytes(isa.encode(i, self.config)) for i in self.insns)

    def uop_bytes(self) -> bytes:
        return b"".join(isa.encode_uop(u, self.config).to_bytes(4, "little") for u in self.uops)

    def dram_image(self, inputs: dict[str, np.ndarray] | None = None) -> np.ndarray:
        """A fresh uint8 DRAM image of ``dram_bytes`` bytes: instructions, uops,
        initial buffer data, then ``inputs`` (by buffer name) written over it.

        Raises:
            KeyError: an input names no buffer.
            ValueError: an input's shape differs from its buffer's.
        """
        img = np.zeros(self.dram_bytes, dtype=np.uint8)
        ib, ub = self.insn_bytes(), self.uop_bytes()
        img[self.insn_base:self.insn_base + len(ib)] = np.frombuffer(ib, np.uint8)
        img[self.uop_base:self.uop_base + len(ub)] = np.frombuffer(ub, np.uint8)
        for b in self.buffers:
            if b.data is not None:
                self.write(img, b.name, b.data)
        for name, arr in (inputs or {}).items():
            self.write(img, name, arr)
        return img

    def write(self, dram: np.ndarray, name: str, arr: np.ndarray) -> None:
        """Write ``arr`` into buffer ``name`` of a DRAM image (converted to its dtype)."""
        b = self.buffer(name)
        a = np.asarray(arr)
        if a.shape != b.shape:
            raise ArgumentError(f"buffer {name!r} has shape {b.shape}; got an array of {a.shape}")
        dram[b.offset:b.offset + b.nbytes] = np.ascontiguousarray(a, b.dtype).view(np.uint8).ravel()

    def read(self, dram: np.ndarray, name: str) -> np.ndarray:
        """A copy of buffer ``name`` from a DRAM image, with its shape and dtype."""
        b = self.buffer(name)
        return dram[b.offset:b.offset + b.nbytes].copy().view(b.dtype).reshape(b.shape)

    # ---- files -----------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        """Write the program file (``vta_hw/program_file.py``) atomically (a temporary file
        renamed into place)."""
        data = program_file.to_bytes(self)
        path = Path(path)
        fd, tmp = tempfile.mkstemp(dir=path.parent or ".", prefix=f".{path.name}.")
        try:
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(fd, 0o666 & ~umask)  # mkstemp makes 0600; outputs follow the umask
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise

    @classmethod
    def load(cls, path: str | Path) -> "Program":
        """Read a program file, every header field and the layout checked
        (``vta_hw/program_file.py``).

        Raises:
            ProgramFormatError: not a program file, another format version, truncated, a
                checksum mismatch, a header field out of range or overlapping regions.
            OSError: the file cannot be opened.
        """
        return program_file.from_bytes(Path(path).read_bytes(), path)
