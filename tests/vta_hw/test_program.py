"""Program container: layout, DRAM image, buffers, and the .vtaprog file format."""
from __future__ import annotations

import json

import numpy as np
import pytest

from vta_hw import program as prog_mod
from vta_hw.config import load_config
from vta_hw.isa import Alu, AluOp, Finish, Gemm, Load, MemId, Store, Uop
from vta_hw.program import DramLayout, Program, ProgramFormatError, alignment


def sample(cfg=None):
    cfg = cfg or load_config("1x8_i8w8a32_11_12_13_14")
    lay = DramLayout(cfg)
    a = np.arange(2 * 8, dtype=np.int8).reshape(2, 1, 8)
    w = lay.alloc("w", (1, 8, 8), "int8", "param", np.eye(8, dtype=np.int8)[None])
    x = lay.alloc("x", a.shape, "int8", "input")
    lay.alloc("acc", (3, 1, 8), "int32", "scratch", np.full((3, 1, 8), -7, np.int32))
    y = lay.alloc("y", (2, 1, 8), "int8", "output")
    ub = lay.alloc_uops(2)
    insns = [Load(mem=MemId.INP, dram_base=lay.elem(x, "inp"), y_size=1, x_size=2, x_stride=2),
             Load(mem=MemId.WGT, dram_base=lay.elem(w, "wgt"), y_size=1, x_size=1, x_stride=1,
                  push_next=True),
             Load(mem=MemId.UOP, dram_base=ub, y_size=1, x_size=2, x_stride=2, pop_prev=True),
             Gemm(uop_bgn=0, uop_end=2, iter_out=1, iter_in=1, push_next=True),
             Alu(alu_op=AluOp.SHR, use_imm=True, imm=-2, uop_bgn=0, uop_end=1, iter_out=1,
                 iter_in=1),
             Store(pop_prev=True, push_prev=True, dram_base=lay.elem(y, "out"), y_size=1,
                   x_size=2, x_stride=2),
             Finish(pop_next=True)]
    return lay.finish(insns, [Uop(0, 0, 0), Uop(1, 1, 0)]), a


def test_layout_is_aligned_and_ordered():
    p, _ = sample()
    a = alignment(p.config)
    assert a == 64
    offsets = [b.offset for b in p.buffers]
    assert all(o % a == 0 for o in offsets) and offsets == sorted(offsets)
    assert p.uop_base % a == 0 and p.uop_base >= p.buffers[-1].offset + p.buffers[-1].nbytes
    assert p.insn_base % a == 0 and p.insn_base >= p.uop_base + 4 * len(p.uops)
    assert p.dram_bytes % a == 0 and p.dram_bytes >= p.insn_base + 16 * len(p.insns)


def test_alignment_covers_the_largest_element():
    assert alignment(load_config("1x32_i8w8a32_15_16_19_18_bus128")) == 32 * 32


def test_dram_image_holds_insns_uops_data_and_inputs():
    p, a = sample()
    img = p.dram_image({"x": a})
    assert img.dtype == np.uint8 and img.size == p.dram_bytes
    assert bytes(img[p.insn_base:p.insn_base + 16 * len(p.insns)]) == p.insn_bytes()
    assert bytes(img[p.uop_base:p.uop_base + 8]) == p.uop_bytes()
    assert np.array_equal(p.read(img, "x"), a)
    assert np.array_equal(p.read(img, "acc"), np.full((3, 1, 8), -7, np.int32))
    assert not p.read(img, "y").any()


def test_buffer_errors():
    p, _ = sample()
    with pytest.raises(KeyError, match="program has no buffer 'z'; buffers: w, x, acc, y"):
        p.buffer("z")
    with pytest.raises(ValueError,
                       match=r"buffer 'x' has shape \(2, 1, 8\); got an array of \(3,\)"):
        p.dram_image({"x": np.zeros(3)})
    lay = DramLayout(p.config)
    lay.alloc("a", (1,), "int8")
    with pytest.raises(ValueError, match="buffer 'a' is already allocated"):
        lay.alloc("a", (1,), "int8")
    with pytest.raises(ValueError, match="kind must be one of"):
        lay.alloc("b", (1,), "int8", "weights")
    with pytest.raises(ValueError, match=r"data has shape \(2,\), expected \(1,\)"):
        lay.alloc("c", (1,), "int8", data=np.zeros(2))


def test_more_uops_than_reserved_is_refused():
    cfg = load_config()
    lay = DramLayout(cfg)
    lay.alloc_uops(1)
    lay.alloc("after", (64,), "int8")  # a buffer right after the uop region
    with pytest.raises(ValueError, match="20 uops do not fit the space reserved by alloc_uops"):
        lay.finish([Finish()], [Uop()] * 20)


def test_save_load_round_trip(tmp_path):
    p, a = sample()
    path = tmp_path / "p.vtaprog"
    p.save(path)
    q = Program.load(path)
    assert q.config == p.config and q.insns == p.insns and q.uops == p.uops
    assert (q.insn_base, q.uop_base, q.dram_bytes) == (p.insn_base, p.uop_base, p.dram_bytes)
    assert q.buffers == p.buffers  # data is not compared by BufferSpec equality
    for b, c in zip(p.buffers, q.buffers):
        assert (b.data is None) == (c.data is None)
        if b.data is not None:
            assert np.array_equal(b.data, c.data) and c.data.dtype == b.data.dtype
    assert np.array_equal(q.dram_image({"x": a}), p.dram_image({"x": a}))
    assert [f.name for f in tmp_path.iterdir()] == ["p.vtaprog"]  # no temporary left


def _saved(tmp_path):
    p, _ = sample()
    path = tmp_path / "p.vtaprog"
    p.save(path)
    return path, path.read_bytes()


def test_other_version_is_refused(tmp_path):
    path, data = _saved(tmp_path)
    path.write_bytes(data[:8] + (prog_mod.FORMAT_VERSION + 1).to_bytes(4, "little") + data[12:])
    with pytest.raises(ProgramFormatError, match=f"program format version "
                                                 f"{prog_mod.FORMAT_VERSION + 1}, this tool reads "
                                                 f"version {prog_mod.FORMAT_VERSION}"):
        Program.load(path)


@pytest.mark.parametrize("cut", [4, 12, 40, -1, -100])
def test_truncated_file_is_refused(tmp_path, cut):
    path, data = _saved(tmp_path)
    path.write_bytes(data[:cut])
    with pytest.raises(ProgramFormatError):
        Program.load(path)


def test_truncation_messages(tmp_path):
    path, data = _saved(tmp_path)
    path.write_bytes(data[:40])
    with pytest.raises(ProgramFormatError, match="truncated inside the header"):
        Program.load(path)
    path.write_bytes(data[:-1])
    with pytest.raises(ProgramFormatError, match="truncated: payload has"):
        Program.load(path)


def test_corrupted_payload_is_refused(tmp_path):
    path, data = _saved(tmp_path)
    bad = bytearray(data)
    bad[-5] ^= 0x40
    path.write_bytes(bytes(bad))
    with pytest.raises(ProgramFormatError, match="checksum mismatch"):
        Program.load(path)


def test_bad_magic_and_bad_header(tmp_path):
    path, data = _saved(tmp_path)
    path.write_bytes(b"NOTAPROG" + data[8:])
    with pytest.raises(ProgramFormatError, match="not a VTA program file"):
        Program.load(path)
    hlen = int.from_bytes(data[12:16], "little")
    header = json.loads(data[16:16 + hlen])
    for broken in ({**header, "config": {"LOG_BLOCK": 9}},
                   {k: v for k, v in header.items() if k != "payload_bytes"}):
        hb = json.dumps(broken).encode()
        path.write_bytes(data[:12] + len(hb).to_bytes(4, "little") + hb + data[16 + hlen:])
        with pytest.raises(ProgramFormatError, match="bad header"):
            Program.load(path)
