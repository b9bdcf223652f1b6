"""Read an ELF64 little-endian shared library's dynamic section and dynamic symbols with
``struct`` alone (the tests check what the loader will read, not readelf's text)."""
from __future__ import annotations

import struct

SHT_DYNAMIC, SHT_DYNSYM = 6, 11
DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH = 1, 14, 15, 29
STB_LOCAL = 0


def _sections(data: bytes) -> list:
    """``[(type, offset, size, link)]`` of every section header."""
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, "not ELF64 little-endian"
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    out = []
    for i in range(shnum):
        _, typ, _, _, off, size, link = struct.unpack_from("<IIQQQQI", data, shoff + i * shentsize)
        out.append((typ, off, size, link))
    return out


def _string(data: bytes, strtab_off: int, at: int) -> str:
    end = data.index(b"\0", strtab_off + at)
    return data[strtab_off + at:end].decode()


def dynamic(path) -> dict:
    """``{"soname": str | None, "needed": [str], "runpath": [str]}`` (runpath: DT_RUNPATH or
    DT_RPATH entries, split at ':')."""
    data = open(path, "rb").read()
    secs = _sections(data)
    _, off, size, link = next(s for s in secs if s[0] == SHT_DYNAMIC)
    strtab = secs[link][1]
    out = {"soname": None, "needed": [], "runpath": []}
    for k in range(0, size, 16):
        tag, val = struct.unpack_from("<qQ", data, off + k)
        if tag == DT_SONAME:
            out["soname"] = _string(data, strtab, val)
        elif tag == DT_NEEDED:
            out["needed"].append(_string(data, strtab, val))
        elif tag in (DT_RPATH, DT_RUNPATH):
            out["runpath"] += _string(data, strtab, val).split(":")
    return out


def exported(path) -> set:
    """Names of the symbols ``path`` defines for other objects (global or weak, not undefined)."""
    data = open(path, "rb").read()
    secs = _sections(data)
    _, off, size, link = next(s for s in secs if s[0] == SHT_DYNSYM)
    strtab = secs[link][1]
    names = set()
    for k in range(0, size, 24):
        name, info, _, shndx = struct.unpack_from("<IBBH", data, off + k)
        if shndx != 0 and info >> 4 != STB_LOCAL and name:
            names.add(_string(data, strtab, name))
    return names
