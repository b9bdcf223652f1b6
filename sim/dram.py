"""The DRAM model: burst splitting and the cycle timing of one memory port.

Everything here follows ``vta_hw.timing.DramTiming`` (shared with the cocotb
memory model of the RTL testbench), so that both sides time a burst the same:

- a transfer of contiguous bytes is split by ``DramTiming.bursts`` into bursts
  of at most ``max_burst_beats`` bus beats that never cross a ``page_bytes``
  boundary (the first beat is the bus word holding the first byte);
- a **read** burst accepted (granted) at cycle ``g`` delivers beat ``k`` at
  cycle ``g + latency + k * beat_interval``;
- a **write** burst granted at ``g`` sends beat ``k`` at ``g + 1 + k * beat_interval``
  (the memory raises ``wr_ready`` from the cycle after the accept) and
  completes (``wr_done``) ``latency`` cycles after its last beat;
- the port serves one burst at a time: it is free again the cycle after the
  burst's last event (last read beat, or write completion).

Units: addresses and sizes in bytes, times in cycles, ``bus_bytes`` = the
config's ``BUS_WIDTH / 8``.
"""
from __future__ import annotations

from vta_hw.timing import DramTiming


class DramModel:
    """Timing of bursts on the single memory port, for one bus width.

    Args:
        timing: the DRAM parameters (latency, bandwidth, burst and page size).
        bus_bytes: bytes per beat (``VTAConfig.bus_bytes``).

    Raises:
        ValueError: ``bus_bytes`` is not a positive power of two.
    """

    __slots__ = ("timing", "bus_bytes", "beat_interval", "latency", "_cache")

    def __init__(self, timing: DramTiming, bus_bytes: int):
        if bus_bytes <= 0 or bus_bytes & (bus_bytes - 1):
            raise ValueError(f"bus_bytes must be a positive power of two, not {bus_bytes!r}")
        self.timing = timing
        self.bus_bytes = bus_bytes
        self.beat_interval = timing.beat_interval(bus_bytes)
        self.latency = timing.latency
        self._cache: dict[tuple[int, int], tuple[int, ...]] = {}

    # ---- splitting ------------------------------------------------------------
    def bursts(self, byte_addr: int, nbytes: int) -> list[tuple[int, int]]:
        """``[(first_byte, beats), ...]`` covering bytes ``[byte_addr, byte_addr + nbytes)``."""
        return self.timing.bursts(byte_addr, nbytes, self.bus_bytes)

    def burst_beats(self, byte_addr: int, nbytes: int) -> tuple[int, ...]:
        """Beats of each burst of a contiguous transfer (memoised by offset in
        the page and size, which is all the split depends on)."""
        key = (byte_addr % self.timing.page_bytes, nbytes)
        got = self._cache.get(key)
        if got is None:
            got = tuple(b for _, b in self.bursts(byte_addr, nbytes))
            self._cache[key] = got
        return got

    def rows(self, elem_bytes: int, dram_base: int, y_size: int, x_size: int,
             x_stride: int) -> list[tuple[int, ...]]:
        """Burst beats of each row of a 2-D DMA (addresses in elements of ``elem_bytes``).

        Row ``y`` covers bytes ``[(dram_base + y * x_stride) * elem_bytes, + x_size * elem_bytes)``.
        """
        n = x_size * elem_bytes
        return [self.burst_beats((dram_base + y * x_stride) * elem_bytes, n)
                for y in range(y_size)]

    # ---- timing -----------------------------------------------------------------
    def read_beats(self, grant: int, beats: int) -> tuple[int, int]:
        """``(first_beat_cycle, last_beat_cycle)`` of a read burst granted at ``grant``."""
        first = grant + self.latency
        return first, first + (beats - 1) * self.beat_interval

    def write_done(self, grant: int, beats: int) -> tuple[int, int]:
        """``(last_beat_cycle, completion_cycle)`` of a write burst granted at ``grant``."""
        last = grant + 1 + (beats - 1) * self.beat_interval
        return last, last + self.latency

    def busy_until(self, grant: int, beats: int, write: bool) -> int:
        """Cycle of the burst's last event; the port is free from the next cycle."""
        if write:
            return self.write_done(grant, beats)[1]
        return self.read_beats(grant, beats)[1]

    def peak_bytes_per_cycle(self) -> float:
        """Bytes per cycle while beats stream (latency not counted)."""
        return self.bus_bytes / self.beat_interval
