"""``Program.load`` checks every header field and the layout of a ``.vtaprog`` file, and its
checksum covers the header (the config above all); each failure names the field, the value
and the limit."""
from __future__ import annotations

import json

import pytest

from vta_hw import program_file
from vta_hw.config import load_config
from vta_hw.isa import Finish, Uop
from vta_hw.program import DramLayout, Program, ProgramFormatError


def _program():
    cfg = load_config("1x8_i8w8a32_11_12_13_14")
    lay = DramLayout(cfg)
    lay.alloc("x", (4, 1, 8), "int8", "input")
    lay.alloc_uops(2)
    return lay.finish([Finish()] * 3, [Uop(0, 0, 0), Uop(1, 1, 0)])


def _split(data: bytes):
    hlen = int.from_bytes(data[12:16], "little")
    return json.loads(data[16:16 + hlen]), data[16 + hlen:]


def _forge(data: bytes, fix_crc=True, **edits) -> bytes:
    """``data`` with header fields replaced; the checksum recomputed unless ``fix_crc`` is
    False (what a careful forger or a buggy writer would produce)."""
    h, payload = _split(data)
    h.update(edits)
    if fix_crc:
        h["crc32"] = program_file.checksum(h, payload)
    hb = json.dumps(h, sort_keys=True).encode()
    return data[:12] + len(hb).to_bytes(4, "little") + hb + payload


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "p.vtaprog"
    _program().save(path)
    return path, path.read_bytes()


def _refused(path, data, *words):
    path.write_bytes(data)
    with pytest.raises(ProgramFormatError) as info:
        Program.load(path)
    for w in words:
        assert w in str(info.value), str(info.value)
    assert str(path) in str(info.value)


def test_config_edit_breaks_the_checksum(saved):
    path, data = saved
    h, _ = _split(data)
    other = dict(h["config"], CMD_QUEUE_DEPTH=h["config"].get("CMD_QUEUE_DEPTH", 8) + 1)
    _refused(path, _forge(data, fix_crc=False, config=other), "checksum mismatch")


@pytest.mark.parametrize("field,value,words", [
    ("dram_bytes", 1 << 40, ["dram_bytes 1099511627776", "limit 4294967296"]),
    ("n_insns", 1.5, ["n_insns must be a non-negative integer, not 1.5"]),
    ("n_uops", -1, ["n_uops must be a non-negative integer, not -1"]),
    ("insn_base", True, ["insn_base must be a non-negative integer, not True"]),
    ("n_insns", 10 ** 9, ["n_insns 1000000000 x 16", "exceed the payload"]),
])
def test_bad_header_fields_are_named(saved, field, value, words):
    path, data = saved
    _refused(path, _forge(data, **{field: value}), *words)


def test_instructions_over_uops_are_refused(saved):
    path, data = saved
    h, _ = _split(data)
    _refused(path, _forge(data, insn_base=h["uop_base"]), "bad layout", "overlaps uops")


def test_instructions_past_the_image_are_refused(saved):
    path, data = saved
    h, _ = _split(data)
    _refused(path, _forge(data, dram_bytes=h["insn_base"]),
             "instructions at insn_base", "reach past dram_bytes")


def test_buffer_over_instructions_is_refused(saved):
    path, data = saved
    h, _ = _split(data)
    bufs = [dict(h["buffers"][0], offset=h["insn_base"])]
    _refused(path, _forge(data, buffers=bufs), "overlaps", "buffer 'x'")


def test_misaligned_base_is_refused(saved):
    path, data = saved
    h, _ = _split(data)
    _refused(path, _forge(data, uop_base=h["uop_base"] + 2), "uop_base", "multiple of 4")
