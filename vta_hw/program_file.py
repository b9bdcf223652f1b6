"""The ``.vtaprog`` file format: a ``Program`` as bytes and back, every header field checked.

Layout, version ``FORMAT_VERSION``::

    offset  size  content
    0       8     magic b"VTAPROG\\n"
    8       4     format version, uint32 little-endian
    12      4     header length H, bytes, uint32 little-endian
    16      H     header, UTF-8 JSON (keys sorted): config (the accelerator fields),
                  n_insns, n_uops, insn_base, uop_base, dram_bytes (bytes),
                  buffers[] (name, offset, shape, dtype, kind, data_offset,
                  data_bytes), payload_bytes, crc32
    16+H    ...   payload: instructions (n_insns x 16 bytes), uops
                  (n_uops x 4 bytes), then initial data of the buffers that
                  carry some, at data_offset relative to the payload start

``crc32`` (zlib) covers the header without the ``crc32`` key (its sorted-key JSON,
so the config is covered) followed by the payload.

Reading checks, each failure a ``ProgramFormatError`` naming the file, the field,
its value and the limit: magic, version, lengths; every header field's type and
range (counts and offsets non-negative integers, ``dram_bytes`` at most
``MAX_DRAM_BYTES``); the checksum; the layout (instructions, uops and every
buffer inside the DRAM image, 16-/4-byte aligned, no two regions overlapping);
the buffers' data inside the payload. Nothing is allocated from a header value
before it is checked.
"""
from __future__ import annotations

import json
import zlib

import numpy as np

from vta_hw import isa
from vta_hw.config import ConfigError, VTAConfig
from vta_hw.errors import VtaError

MAGIC = b"VTAPROG\n"
FORMAT_VERSION = 2
BUFFER_KINDS = ("input", "output", "param", "scratch")
#: the largest DRAM image a program may declare: the 32-bit byte addresses of the memory port
MAX_DRAM_BYTES = 1 << 32
_COUNTS = ("n_insns", "n_uops", "insn_base", "uop_base", "dram_bytes", "payload_bytes", "crc32")


class ProgramFormatError(VtaError, ValueError):
    """A program file cannot be read: wrong magic or version, truncated, corrupt, or a header
    field out of range; the message names the file, the field, its value and the limit."""


def checksum(header: dict, payload: bytes) -> int:
    """The ``crc32`` field of a file with ``header`` (its other keys) and ``payload``."""
    body = {k: v for k, v in header.items() if k != "crc32"}
    return zlib.crc32(payload, zlib.crc32(json.dumps(body, sort_keys=True).encode()))


def to_bytes(prog) -> bytes:
    """The ``.vtaprog`` file of the ``Program`` ``prog``."""
    ib, ub = prog.insn_bytes(), prog.uop_bytes()
    blobs, bufs, pos = [], [], len(ib) + len(ub)
    for b in prog.buffers:
        entry = {"name": b.name, "offset": b.offset, "shape": list(b.shape),
                 "dtype": b.dtype, "kind": b.kind, "data_offset": None, "data_bytes": 0}
        if b.data is not None:
            raw = np.ascontiguousarray(b.data, b.dtype).tobytes()
            entry["data_offset"], entry["data_bytes"] = pos, len(raw)
            blobs.append(raw)
            pos += len(raw)
        bufs.append(entry)
    payload = ib + ub + b"".join(blobs)
    header = {"config": prog.config.to_dict(), "n_insns": len(prog.insns),
              "n_uops": len(prog.uops), "insn_base": prog.insn_base,
              "uop_base": prog.uop_base, "dram_bytes": prog.dram_bytes,
              "buffers": bufs, "payload_bytes": len(payload)}
    header["crc32"] = checksum(header, payload)
    hb = json.dumps(header, sort_keys=True).encode()
    return (MAGIC + FORMAT_VERSION.to_bytes(4, "little") + len(hb).to_bytes(4, "little")
            + hb + payload)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _header(path, data: bytes) -> tuple[dict, bytes]:
    """The header (fields type-checked) and the payload of the file bytes ``data``."""
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
    except (ValueError, RecursionError) as e:
        raise ProgramFormatError(f"{path}: bad header: not JSON ({e})") from None
    if not isinstance(h, dict):
        raise ProgramFormatError(f"{path}: bad header: a JSON {type(h).__name__}, not an object")
    missing = [k for k in ("config", "buffers") + _COUNTS if k not in h]
    if missing:
        raise ProgramFormatError(f"{path}: bad header: missing {', '.join(missing)}")
    for k in _COUNTS:
        if not _is_int(h[k]) or h[k] < 0:
            raise ProgramFormatError(f"{path}: bad header: {k} must be a non-negative integer, "
                                     f"not {h[k]!r}")
    if h["dram_bytes"] > MAX_DRAM_BYTES:
        raise ProgramFormatError(f"{path}: bad header: dram_bytes {h['dram_bytes']} exceeds the "
                                 f"limit {MAX_DRAM_BYTES} (4 GiB, 32-bit DRAM addresses)")
    if not isinstance(h["buffers"], list):
        raise ProgramFormatError(f"{path}: bad header: buffers must be a list, not "
                                 f"{type(h['buffers']).__name__}")
    return h, data[16 + hlen:]


def _config(path, h: dict) -> VTAConfig:
    try:
        if not isinstance(h["config"], dict):
            raise ConfigError(f"config must be an object, not {h['config']!r}")
        return VTAConfig.from_dict(h["config"])
    except (ConfigError, ValueError, TypeError, KeyError) as e:
        raise ProgramFormatError(f"{path}: bad header: config: {e}") from None


def _check_payload(path, h: dict, payload: bytes) -> None:
    if len(payload) > h["payload_bytes"]:
        raise ProgramFormatError(f"{path}: has {len(payload) - h['payload_bytes']} bytes more "
                                 "than the header says (trailing data)")
    if len(payload) != h["payload_bytes"]:
        raise ProgramFormatError(f"{path}: truncated: payload has {len(payload)} bytes, "
                                 f"header says {h['payload_bytes']}")
    if checksum(h, payload) != h["crc32"]:
        raise ProgramFormatError(f"{path}: checksum mismatch: the header or the payload is "
                                 "corrupt or was edited; rebuild the program")
    code = 16 * h["n_insns"] + 4 * h["n_uops"]
    if code > len(payload):
        raise ProgramFormatError(f"{path}: bad header: n_insns {h['n_insns']} x 16 + n_uops "
                                 f"{h['n_uops']} x 4 = {code} bytes exceed the payload of "
                                 f"{len(payload)} bytes")


def _buffer_entry(path, k: int, e, payload_bytes: int, dram_bytes: int) -> tuple[str, int, int]:
    """Check header entry ``buffers[k]``; its (label, offset, nbytes)."""
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
    try:
        dt = np.dtype(e["dtype"]) if isinstance(e["dtype"], str) else None
    except TypeError:
        dt = None
    if dt is None or dt.kind not in "iufb":
        raise ProgramFormatError(f"{where}: dtype {e['dtype']!r} is not a numeric numpy dtype "
                                 "(e.g. 'int8', 'int32')")
    shape = e["shape"]
    if not isinstance(shape, list) or not all(_is_int(d) and d >= 0 for d in shape):
        raise ProgramFormatError(f"{where}: shape {shape!r} must be a list of non-negative ints")
    if e["kind"] not in BUFFER_KINDS:
        raise ProgramFormatError(f"{where}: kind {e['kind']!r} is not one of {BUFFER_KINDS}")
    nbytes = dt.itemsize
    for d in shape:  # Python ints: no overflow on a forged shape
        nbytes *= d
    off = e["offset"]
    if not _is_int(off) or off < 0 or off + nbytes > dram_bytes:
        raise ProgramFormatError(f"{where}: offset {off!r} + {nbytes} bytes does not fit the "
                                 f"DRAM image of {dram_bytes} bytes")
    doff, dbytes = e["data_offset"], e["data_bytes"]
    if doff is not None:
        if (not _is_int(doff) or not _is_int(dbytes) or doff < 0
                or doff + dbytes > payload_bytes):
            raise ProgramFormatError(f"{where}: data_offset {doff!r} + data_bytes {dbytes!r} lies "
                                     f"outside the payload of {payload_bytes} bytes")
        if dbytes != nbytes:
            raise ProgramFormatError(f"{where}: data_bytes {dbytes} != {nbytes} bytes of shape "
                                     f"{tuple(shape)} {dt.name}")
    return f"buffer {name!r}", off, nbytes


def _check_layout(path, h: dict, payload: bytes) -> None:
    """Instructions, uops and buffers lie inside the DRAM image, aligned, and never overlap."""
    dram = h["dram_bytes"]
    regions = [("instructions", h["insn_base"], 16 * h["n_insns"], 16),
               ("uops", h["uop_base"], 4 * h["n_uops"], 4)]
    for what, base, size, align in regions:
        field = "insn_base" if what == "instructions" else "uop_base"
        if base % align:
            raise ProgramFormatError(f"{path}: bad header: {field} {base} is not a multiple of "
                                     f"{align} bytes")
        if base + size > dram:
            raise ProgramFormatError(f"{path}: bad header: the {what} at {field} {base} + {size} "
                                     f"bytes reach past dram_bytes {dram}")
    for k, e in enumerate(h["buffers"]):
        label, off, nbytes = _buffer_entry(path, k, e, len(payload), dram)
        regions.append((label, off, nbytes, 1))
    spans = sorted((base, base + size, what) for what, base, size, _ in regions if size)
    for (a0, a1, a), (b0, b1, b) in zip(spans, spans[1:]):
        if b0 < a1:
            raise ProgramFormatError(f"{path}: bad layout: {b} at byte {b0} overlaps {a} "
                                     f"(bytes {a0}..{a1 - 1}); regions must not overlap")
    names = [e["name"] for e in h["buffers"]]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise ProgramFormatError(f"{path}: bad header: buffer name {dup!r} appears twice")


def from_bytes(data: bytes, path="<bytes>"):
    """The ``Program`` of the file bytes ``data`` (``path`` names it in messages).

    Raises:
        ProgramFormatError: see the module docstring.
    """
    from vta_hw.program import BufferSpec, Program
    h, payload = _header(path, data)
    cfg = _config(path, h)
    _check_payload(path, h, payload)
    _check_layout(path, h, payload)
    ni, nu = h["n_insns"], h["n_uops"]
    try:
        insns = [isa.decode(isa.insn_from_bytes(payload[16 * k:16 * k + 16]), cfg)
                 for k in range(ni)]
        uo = 16 * ni
        uops = [isa.decode_uop(int.from_bytes(payload[uo + 4 * k:uo + 4 * k + 4], "little"), cfg)
                for k in range(nu)]
    except isa.DecodeError as e:
        raise ProgramFormatError(f"{path}: {e}") from None
    bufs = []
    for e in h["buffers"]:
        arr = None
        if e["data_offset"] is not None:
            raw = payload[e["data_offset"]:e["data_offset"] + e["data_bytes"]]
            arr = np.frombuffer(raw, e["dtype"]).reshape(e["shape"]).copy()
        bufs.append(BufferSpec(e["name"], e["offset"], tuple(e["shape"]), np.dtype(e["dtype"]).name,
                               e["kind"], arr))
    return Program(cfg, insns, uops, bufs, insn_base=h["insn_base"], uop_base=h["uop_base"],
                   dram_bytes=h["dram_bytes"])
