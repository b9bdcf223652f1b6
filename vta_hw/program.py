"""Program container: instruction stream + uop buffer + the DRAM image it expects.

A ``Program`` is what the compiler emits and what every backend (functional
simulator, cycle simulator, RTL, FPGA board) runs. It places everything in
one flat DRAM image of ``dram_bytes`` bytes:

- named data buffers (``BufferSpec``: byte offset, shape, dtype, kind), each
  aligned to ``alignment(cfg)`` bytes so that any buffer can be addressed in
  elements of any SRAM (instructions count elements, not bytes);
- the uop buffer at ``uop_base`` (bytes), 32-bit little-endian words;
- the instruction stream at ``insn_base`` (bytes), 128-bit little-endian words.

File format (``.vtaprog``), version ``FORMAT_VERSION``::

    offset  size  content
    0       8     magic b"VTAPROG\\n"
    8       4     format version, uint32 little-endian
    12      4     header length H, bytes, uint32 little-endian
    16      H     header, UTF-8 JSON: config fields, n_insns, n_uops,
                  insn_base, uop_base, dram_bytes, buffers[] (name, offset,
                  shape, dtype, kind, data_offset, data_bytes), payload_bytes,
                  payload_crc32
    16+H    ...   payload: instructions (n_insns x 16 bytes), uops
                  (n_uops x 4 bytes), then initial data of the buffers that
                  carry some, at data_offset relative to the payload start

Loading a file of another version, a truncated file or a corrupted payload
raises ``ProgramFormatError``.
"""
from __future__ import annotations

import dataclasses
import json
import os
import tempfile
import zlib
from pathlib import Path

import numpy as np

from vta_hw import isa
from vta_hw.config import ConfigError, VTAConfig
from vta_hw.errors import VtaError

MAGIC = b"VTAPROG\n"
FORMAT_VERSION = 1
BUFFER_KINDS = ("input", "output", "param", "scratch")


class ProgramFormatError(VtaError, ValueError):
    """A program file cannot be read: wrong magic or version, truncated, or corrupt."""


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
            ValueError: duplicate name, unknown kind, or data of another shape.
        """
        if any(b.name == name for b in self.buffers):
            raise ValueError(f"buffer {name!r} is already allocated; names must be unique")
        if kind not in BUFFER_KINDS:
            raise ValueError(f"buffer {name!r}: kind must be one of {BUFFER_KINDS}, not {kind!r}")
        shape = tuple(int(s) for s in shape)
        if data is not None:
            data = np.ascontiguousarray(data, dtype=dtype)
            if data.shape != shape:
                raise ValueError(f"buffer {name!r}: data has shape {data.shape}, expected {shape}")
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
            raise ValueError(f"{len(uops)} uops do not fit the space reserved by alloc_uops")
        insn_base = _align(self._top, alignment(self.cfg))
        dram_bytes = _align(insn_base + 16 * len(insns), alignment(self.cfg))
        return Program(self.cfg, list(insns), list(uops), list(self.buffers),
                       insn_base=insn_base, uop_base=uop_base, dram_bytes=dram_bytes)


def _check_buffer_entry(path, k: int, e, payload_bytes: int, dram_bytes) -> None:
    """Raise ProgramFormatError naming the file and the buffer if a header entry is malformed."""
    if not isinstance(e, dict):
        raise ProgramFormatError(f"{path}: bad header: buffer #{k} is not an object")
    name = e.get("name")
    where = f"{path}: buffer {name!r}" if isinstance(name, str) else f"{path}: buffer #{k}"
    missing = [f for f in ("name", "offset", "shape", "dtype", "kind", "data_offset", "data_bytes")
               if f not in e]
    if missing:
        raise ProgramFormatError(f"{where}: missing {', '.join(missing)}")
    if not isinstance(name, str):
        raise ProgramFormatError(f"{where}: name must be a string, not {name!r}")

    def is_int(v):
        return isinstance(v, int) and not isinstance(v, bool)
    try:
        dt = np.dtype(e["dtype"]) if isinstance(e["dtype"], str) else None
    except TypeError:
        dt = None
    if dt is None or dt.kind not in "iufb":
        raise ProgramFormatError(f"{where}: dtype {e['dtype']!r} is not a numeric numpy dtype "
                                 "(e.g. 'int8', 'int32')")
    shape = e["shape"]
    if not isinstance(shape, list) or not all(is_int(d) and d >= 0 for d in shape):
        raise ProgramFormatError(f"{where}: shape {shape!r} must be a list of non-negative ints")
    if e["kind"] not in BUFFER_KINDS:
        raise ProgramFormatError(f"{where}: kind {e['kind']!r} is not one of {BUFFER_KINDS}")
    nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    off = e["offset"]
    if not is_int(off) or off < 0 or (is_int(dram_bytes) and off + nbytes > dram_bytes):
        raise ProgramFormatError(f"{where}: offset {off!r} + {nbytes} bytes does not fit the "
                                 f"DRAM image of {dram_bytes} bytes")
    doff, dbytes = e["data_offset"], e["data_bytes"]
    if doff is not None:
        if (not is_int(doff) or not is_int(dbytes) or doff < 0
                or doff + dbytes > payload_bytes):
            raise ProgramFormatError(f"{where}: data_offset {doff!r} + data_bytes {dbytes!r} lies "
                                     f"outside the payload of {payload_bytes} bytes")
        if dbytes != nbytes:
            raise ProgramFormatError(f"{where}: data_bytes {dbytes} != {nbytes} bytes of shape "
                                     f"{tuple(shape)} {dt.name}")


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
            raise ValueError(f"buffer {name!r} has shape {b.shape}; got an array of {a.shape}")
        dram[b.offset:b.offset + b.nbytes] = np.ascontiguousarray(a, b.dtype).view(np.uint8).ravel()

    def read(self, dram: np.ndarray, name: str) -> np.ndarray:
        """A copy of buffer ``name`` from a DRAM image, with its shape and dtype."""
        b = self.buffer(name)
        return dram[b.offset:b.offset + b.nbytes].copy().view(b.dtype).reshape(b.shape)

    # ---- files -----------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        """Write the program file atomically (a temporary file renamed into place)."""
        ib, ub = self.insn_bytes(), self.uop_bytes()
        blobs, bufs, pos = [], [], len(ib) + len(ub)
        for b in self.buffers:
            entry = {"name": b.name, "offset": b.offset, "shape": list(b.shape),
                     "dtype": b.dtype, "kind": b.kind, "data_offset": None, "data_bytes": 0}
            if b.data is not None:
                raw = np.ascontiguousarray(b.data, b.dtype).tobytes()
                entry["data_offset"], entry["data_bytes"] = pos, len(raw)
                blobs.append(raw)
                pos += len(raw)
            bufs.append(entry)
        payload = ib + ub + b"".join(blobs)
        header = {"config": self.config.to_dict(), "n_insns": len(self.insns),
                  "n_uops": len(self.uops), "insn_base": self.insn_base,
                  "uop_base": self.uop_base, "dram_bytes": self.dram_bytes,
                  "buffers": bufs, "payload_bytes": len(payload),
                  "payload_crc32": zlib.crc32(payload)}
        hb = json.dumps(header, sort_keys=True).encode()
        data = (MAGIC + FORMAT_VERSION.to_bytes(4, "little") + len(hb).to_bytes(4, "little")
                + hb + payload)
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
        """Read a program file.

        Raises:
            ProgramFormatError: not a program file, another format version,
                truncated, or a payload whose checksum does not match.
            OSError: the file cannot be opened.
        """
        data = Path(path).read_bytes()
        if len(data) < 16 and MAGIC.startswith(data[:8]):
            raise ProgramFormatError(f"{path}: truncated ({len(data)} bytes, header missing)")
        if data[:8] != MAGIC:
            raise ProgramFormatError(f"{path}: not a VTA program file (bad magic {data[:8]!r})")
        if len(data) < 16:
            raise ProgramFormatError(f"{path}: truncated ({len(data)} bytes, header missing)")
        version = int.from_bytes(data[8:12], "little")
        if version != FORMAT_VERSION:
            raise ProgramFormatError(
                f"{path}: program format version {version}, this tool reads version "
                f"{FORMAT_VERSION}; rebuild the program with this version of the compiler")
        hlen = int.from_bytes(data[12:16], "little")
        if len(data) < 16 + hlen:
            raise ProgramFormatError(f"{path}: truncated inside the header "
                                     f"({len(data)} bytes, header needs {16 + hlen})")
        try:
            h = json.loads(data[16:16 + hlen])
            cfg = VTAConfig.from_dict(h["config"])
            missing = [k for k in ("n_insns", "n_uops", "insn_base", "uop_base", "dram_bytes",
                                   "buffers", "payload_bytes", "payload_crc32") if k not in h]
            if missing:
                raise KeyError(f"missing {', '.join(missing)}")
        except (ValueError, KeyError, TypeError, ConfigError) as e:
            raise ProgramFormatError(f"{path}: bad header: {e}") from None
        payload = data[16 + hlen:]
        if isinstance(h["payload_bytes"], int) and len(payload) > h["payload_bytes"]:
            raise ProgramFormatError(f"{path}: has {len(payload) - h['payload_bytes']} bytes more "
                                     "than the header says (trailing data)")
        if len(payload) != h["payload_bytes"]:
            raise ProgramFormatError(f"{path}: truncated: payload has {len(payload)} bytes, "
                                     f"header says {h['payload_bytes']}")
        if zlib.crc32(payload) != h["payload_crc32"]:
            raise ProgramFormatError(f"{path}: payload checksum mismatch (file corrupt)")
        ni, nu = h["n_insns"], h["n_uops"]
        insns = [isa.decode(isa.insn_from_bytes(payload[16 * k:16 * k + 16]), cfg)
                 for k in range(ni)]
        uo = 16 * ni
        uops = [isa.decode_uop(int.from_bytes(payload[uo + 4 * k:uo + 4 * k + 4], "little"), cfg)
                for k in range(nu)]
        bufs = []
        if not isinstance(h["buffers"], list):
            raise ProgramFormatError(f"{path}: bad header: 'buffers' must be a list")
        for k, e in enumerate(h["buffers"]):
            _check_buffer_entry(path, k, e, len(payload), h["dram_bytes"])
            data_arr = None
            if e["data_offset"] is not None:
                raw = payload[e["data_offset"]:e["data_offset"] + e["data_bytes"]]
                data_arr = np.frombuffer(raw, e["dtype"]).reshape(e["shape"]).copy()
            bufs.append(BufferSpec(e["name"], e["offset"], tuple(e["shape"]), e["dtype"],
                                   e["kind"], data_arr))
        return cls(cfg, insns, uops, bufs, insn_base=h["insn_base"], uop_base=h["uop_base"],
                   dram_bytes=h["dram_bytes"])
