"""The latency contract: what every unit of the accelerator costs, in cycles.

The RTL (``vta_hw/rtl``) is built to these numbers and the cycle-accurate
simulator (``sim/cycle.py``) reads them, so that a program's cycle count from
the simulator equals the RTL's exactly. A change here is a change to both.

Machine model (decoupled access-execute, as VTA; Moreau et al., "A Hardware-
Software Blueprint for Flexible Deep Learning Specialization", IEEE Micro 2019):

- **fetch** reads the instruction stream from DRAM with the DMA engine (bursts
  of at most ``DramTiming.max_burst_beats`` beats), decodes the opcode of one
  instruction per ``FETCH_CYCLES_PER_INSN`` cycles and pushes it into the
  command queue of load (INP/WGT loads), compute (UOP/ACC loads, GEMM, ALU,
  FINISH) or store (STOREs). A full command queue (``CMD_QUEUE_DEPTH``
  entries) stalls fetch.
- A module pops dependency tokens before it starts an instruction (it waits
  while a needed token queue is empty) and pushes them when the instruction
  retires. A pushed token is visible to the consumer ``TOKEN_LATENCY`` cycles
  later. Token queues hold ``TOKEN_QUEUE_DEPTH`` tokens; a push into a full
  queue stalls the producer.
- Every instruction costs ``INSN_DECODE_CYCLES`` in its module before any work.
- A DMA transfer (LOAD, STORE, fetch) moves rows of contiguous bytes. Each
  row is split into bursts that neither exceed ``max_burst_beats`` beats nor
  cross a ``DramTiming.page_bytes`` boundary. A read burst's first beat
  arrives ``DramTiming.latency`` cycles after the request is accepted, then
  one beat every ``beat_interval`` cycles. Writes take one beat per
  ``beat_interval`` cycles and complete ``latency`` cycles after the last beat.
  One port serves all modules through a fixed-priority arbiter
  (``ARBITER_PRIORITY``), granting one burst at a time.
- Zero padding of a LOAD writes one SRAM element per cycle, with no memory traffic.
- GEMM and ALU issue one uop iteration per ``GEMM_CYCLES_PER_UOP`` /
  ``ALU_CYCLES_PER_UOP`` cycles and retire ``GEMM_PIPELINE_DEPTH`` /
  ``ALU_PIPELINE_DEPTH`` cycles after the last issue.

The numbers below are the contract; the RTL issue fixes them to what the
hardware does, and each one's docstring says where it comes from.
"""
from __future__ import annotations

import dataclasses

#: Cycles fetch spends decoding and dispatching one instruction.
FETCH_CYCLES_PER_INSN = 1
#: Entries of each of the three command queues (load, compute, store).
CMD_QUEUE_DEPTH = 16
#: Cycles from a token push to the token being poppable by the other module.
TOKEN_LATENCY = 1
#: Tokens each of the four token queues holds.
TOKEN_QUEUE_DEPTH = 32
#: Cycles a module spends on an instruction before its first memory request or uop.
INSN_DECODE_CYCLES = 1
#: Cycles between uop iterations of GEMM (the core is pipelined, initiation interval 1).
GEMM_CYCLES_PER_UOP = 1
#: Cycles from the last GEMM uop issue to its accumulator write (read SRAMs, multiply, add tree, write).
GEMM_PIPELINE_DEPTH = 4
#: Cycles between uop iterations of the ALU (initiation interval 1).
ALU_CYCLES_PER_UOP = 1
#: Cycles from the last ALU uop issue to its accumulator write (read acc, operate, write).
ALU_PIPELINE_DEPTH = 3
#: Arbiter priority for the shared memory port, highest first.
ARBITER_PRIORITY = ("fetch", "load", "compute", "store")


@dataclasses.dataclass(frozen=True, slots=True)
class DramTiming:
    """The DRAM model shared by ``sim/dram.py`` and the cocotb memory model.

    Attributes:
        latency: cycles from an accepted read request to its first data beat
            (and from a write's last beat to its completion).
        bytes_per_cycle: sustained bandwidth, bytes per cycle; a beat of
            ``bus_bytes`` takes ``ceil(bus_bytes / bytes_per_cycle)`` cycles.
        max_burst_beats: longest burst, beats.
        page_bytes: bursts never cross a multiple of this many bytes (AXI: 4096).

    Raises:
        ValueError: a non-positive value, or a page size that is not a power of two.
    """

    latency: int = 32
    bytes_per_cycle: int = 8
    max_burst_beats: int = 16
    page_bytes: int = 4096

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if not isinstance(v, int) or v < (0 if f.name == "latency" else 1):
                raise ValueError(f"DramTiming.{f.name} must be a positive int, not {v!r}")
        if self.page_bytes & (self.page_bytes - 1):
            raise ValueError(f"DramTiming.page_bytes must be a power of two, not {self.page_bytes}")

    def beat_interval(self, bus_bytes: int) -> int:
        """Cycles per data beat of ``bus_bytes`` bytes."""
        return -(-bus_bytes // self.bytes_per_cycle)

    def bursts(self, byte_addr: int, nbytes: int, bus_bytes: int) -> list[tuple[int, int]]:
        """Split a contiguous transfer into bursts: ``[(first_byte, beats), ...]``.

        The transfer covers the bus beats that hold bytes
        ``[byte_addr, byte_addr + nbytes)``; bursts are at most
        ``max_burst_beats`` beats and never cross a ``page_bytes`` boundary.
        """
        if nbytes <= 0:
            return []
        start = byte_addr - byte_addr % bus_bytes
        end = byte_addr + nbytes
        out = []
        while start < end:
            page_end = (start // self.page_bytes + 1) * self.page_bytes
            stop = min(end, page_end, start + self.max_burst_beats * bus_bytes)
            beats = -(-(stop - start) // bus_bytes)
            out.append((start, beats))
            start += beats * bus_bytes
        return out
