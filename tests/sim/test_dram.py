"""The DRAM model: burst splitting and burst timing (sim/dram.py)."""
from __future__ import annotations

import pytest

from sim.dram import DramModel
from vta_hw.timing import DramTiming


@pytest.mark.parametrize("addr, nbytes, bus, timing, want", [
    # aligned, fits one burst
    (0, 64, 8, DramTiming(), [(0, 8)]),
    # unaligned start and end: the beats holding the first and last byte count
    (4, 8, 8, DramTiming(), [(0, 2)]),
    # longer than max_burst_beats (16 x 8 B = 128 B; default 256 x 8 B = 2 KiB)
    (0, 300, 8, DramTiming(max_burst_beats=16), [(0, 16), (128, 16), (256, 6)]),
    (0, 4096, 8, DramTiming(), [(0, 256), (2048, 256)]),
    # crossing a page boundary splits the burst at the page
    (4032, 128, 8, DramTiming(), [(4032, 8), (4096, 8)]),
    (4090, 10, 8, DramTiming(), [(4088, 1), (4096, 1)]),
    # small pages and bursts
    (0, 40, 4, DramTiming(max_burst_beats=3, page_bytes=16), [(0, 3), (12, 1), (16, 3), (28, 1),
                                                              (32, 2)]),
    (0, 0, 8, DramTiming(), []),
])
def test_bursts(addr, nbytes, bus, timing, want):
    d = DramModel(timing, bus)
    assert d.bursts(addr, nbytes) == want
    assert d.burst_beats(addr, nbytes) == tuple(b for _, b in want)
    # the bursts cover the transfer exactly once, in order
    pos = addr - addr % bus
    for a, beats in want:
        assert a == pos
        assert beats <= timing.max_burst_beats
        assert a // timing.page_bytes == (a + beats * bus - 1) // timing.page_bytes
        pos += beats * bus
    assert not want or pos >= addr + nbytes


def test_rows_follow_stride():
    d = DramModel(DramTiming(max_burst_beats=16), 8)
    # 3 rows of 2 elements of 16 bytes, rows 5 elements apart: 32 bytes per row
    assert d.rows(16, 10, 3, 2, 5) == [(4,), (4,), (4,)]
    # a row of 64 UOPs (4 B each) from element 1: bytes 4..260 -> beats 0..32
    assert d.rows(4, 1, 1, 64, 64) == [(16, 16, 1)]
    assert DramModel(DramTiming(), 8).rows(4, 1, 1, 64, 64) == [(33,)]


@pytest.mark.parametrize("bus, bpc, interval", [(8, 8, 1), (16, 8, 2), (4, 8, 1), (64, 8, 8),
                                                (8, 3, 3)])
def test_beat_interval(bus, bpc, interval):
    d = DramModel(DramTiming(bytes_per_cycle=bpc), bus)
    assert d.beat_interval == interval
    assert d.peak_bytes_per_cycle() == bus / interval


def test_bad_bus():
    with pytest.raises(ValueError, match="bus_bytes must be a positive power of two"):
        DramModel(DramTiming(), 12)


def test_burst_timing():
    d = DramModel(DramTiming(latency=32, bytes_per_cycle=4), 8)  # a beat every 2 cycles
    assert d.read_beats(10, 3) == (42, 46)        # beats at 42, 44, 46
    assert d.write_done(10, 3) == (15, 47)        # beats at 11, 13, 15; done 32 later
    assert d.busy_until(10, 3, False) == 46
    assert d.busy_until(10, 3, True) == 47
