"""The latency contract: what every unit of the accelerator costs, in cycles.

The RTL (``vta_hw/rtl``) is built to these rules and the cycle-accurate
simulator (``sim/cycle.py``) implements them, so that a program's cycle
count from the simulator equals the RTL's CYCLES register exactly. A change
here is a change to both. Machine model: decoupled access-execute, as VTA
(Moreau et al., "A Hardware-Software Blueprint for Flexible Deep Learning
Specialization", IEEE Micro 2019).

Conventions. Cycle 0 is the cycle in which ``start`` is high (the cycle after
the host's CTRL write). Registers update at the end of a cycle: a value one
unit writes in cycle t is seen by another from cycle t+1. The run ends in the
cycle f in which FINISH retires; CYCLES = f + 1 and ``done``/``irq`` are high
from f + 1. The BUSY counter of a module counts the cycles 0..f in which its
state machine is not IDLE.

**Fetch** (``rtl/fetch.py``). Cycle 0: IDLE latches ``insn_base`` (bytes, a
multiple of 16 and of the bus width in bytes) and ``insn_count``; REQ from
cycle 1. The ``16 * insn_count`` bytes are read in the bursts of
``DramTiming.bursts(insn_base, 16 * insn_count, bus_bytes)``. In REQ, fetch
requests the next burst in every cycle in which its staging queue is empty;
with no bursts left, REQ goes to IDLE in the next cycle. Each 128-bit
instruction enters the staging queue in the cycle of its last beat; after
the burst's last beat fetch is in REQ again. The dispatcher moves the head
of the staging queue, at most one instruction per ``FETCH_CYCLES_PER_INSN``
(= 1) cycle and in program order, into the command queue of its module
(LOAD INP/WGT -> load; STORE -> store; everything else -> compute) in a
cycle in which that queue holds fewer than ``VTAConfig.CMD_QUEUE_DEPTH``
entries (``CMD_QUEUE_DEPTH`` below by default; presets for small FPGAs set
fewer); an
entry staged in cycle t can move from t+1, and an entry moved in cycle d
can be dequeued by the module from d + ``CMD_QUEUE_LATENCY`` (= d+1). A
dequeue frees its slot from the next cycle.

``VTAConfig.CMD_QUEUE_DEPTH = 0`` builds no command queues but a
*rendezvous* (``_cq0`` in a preset's name; for the smallest FPGAs: it
stores no 128-bit entries):
the dispatcher hands the head of the staging queue straight to its module,
in a cycle d in which that module is in IDLE, and the module takes it in
that same cycle d (``CMD_RENDEZVOUS_LATENCY`` = 0: dispatch and dequeue are
one cycle, TOKENS from d+1). A module is in IDLE from cycle 0 and from r+1
after each RETIRE r until it takes its next instruction, so a dispatch to
a module that holds an instruction waits, in staging, for the cycle after
that instruction's RETIRE (and the instructions behind it in program order
wait too). In cycles this is a one-entry queue whose entry can be dequeued
in the cycle it is moved and whose slot is freed by the RETIRE (room from
r+1) instead of by the dequeue.

**Load, compute, store** run one instruction at a time:

- IDLE: in a cycle d in which the command queue is non-empty (depth 0: in
  which fetch dispatches to the module), dequeue (and leave IDLE at d+1).
- TOKENS, from d + ``INSN_DECODE_CYCLES`` (= 1): in the first cycle s in
  which every token queue the instruction pops (load: ``pop_next`` <- c2l;
  compute: ``pop_prev`` <- l2c, ``pop_next`` <- s2c; store: ``pop_prev`` <-
  c2s) is non-empty, pop them all; the work starts in s (see below).
- RETIRE, in the first cycle r in which every queue it pushes (load:
  ``push_next`` -> l2c; compute: ``push_prev`` -> c2l, ``push_next`` -> c2s;
  store: ``push_prev`` -> s2c) holds fewer than ``TOKEN_QUEUE_DEPTH``
  tokens: push (seen from r + ``TOKEN_LATENCY`` = r+1); IDLE at r+1. A pop and
  a push of the same queue in one cycle both happen.

Work, with s the TOKENS cycle that popped:

- GEMM / ALU (``rtl/core.py``): ``N = iter_out * iter_in * (uop_end - uop_bgn)`` uop iterations
  issue in cycles s+1 .. s+N (``GEMM_CYCLES_PER_UOP`` = ``ALU_CYCLES_PER_UOP``
  = 1, no stalls: the accumulator is read two cycles before the write stage
  and the core forwards its writes of those two cycles, so dependent
  iterations see each other's results); RETIRE from s+N + ``GEMM_PIPELINE_DEPTH`` (=
  ``ALU_PIPELINE_DEPTH`` = 6: five drain cycles, then RETIRE). N == 0:
  RETIRE from s+1. An ALU instruction with opcode MUL (reset or not) issues
  one iteration every M = ``ALU_MUL_CYCLES_PER_UOP`` (= 6) cycles, in
  s+1, s+1+M, .., s+1+(N-1)*M, and RETIREs from s + N*M + ``ALU_PIPELINE_DEPTH``
  (each iteration occupies M issue cycles; the multiplier, one 16x16 per lane
  used three times, writes ACC 5 cycles after it takes the operands in S5,
  in the cycle after the next iteration's ACC read). The compiler never
  emits MUL. ALU REQUANT costs what every one-cycle ALU op costs: its ACC
  write (0) is in S5 like theirs; its OUT write comes one cycle later (S6,
  ``rtl/requant.py``: the shift and clip of the sum registered in S5), the
  last one in the RETIRE cycle, which no unit can observe before a STORE
  ordered after that RETIRE reads OUT.
- FINISH: RETIRE from s+1; its RETIRE cycle is f (the end of the run).
- LOAD (load: INP/WGT; compute: UOP/ACC; ``rtl/dma_read.py``): if
  ``x_size == 0`` or ``y_pad_0 + y_size + y_pad_1 == 0``: a FIN cycle at s+1,
  RETIRE from s+2. Otherwise, starting at t = s+1, for each row of
  ``y_pad_0 + y_size + y_pad_1``: one ROW cycle; a pad row then writes
  ``W = x_pad_0 + x_size + x_pad_1`` zeros, one per cycle; a data row writes
  ``x_pad_0`` zeros (one per cycle), then moves its bursts
  (``DramTiming.bursts((dram_base + y*x_stride) * elem_bytes,
  x_size * elem_bytes, bus_bytes)``) one after another, then writes
  ``x_pad_1`` zeros. After the last row, one FIN cycle, then RETIRE.
  A burst requests the port from the cycle after the previous step and
  continues the cycle after its last beat.
- STORE (``rtl/dma_write.py``): if ``x_size == 0`` or ``y_size == 0``: FIN at
  s+1, RETIRE from s+2. Otherwise, from s+1, for each of ``y_size`` rows:
  one ROW cycle, then the row's bursts
  (``DramTiming.bursts((dram_base + y*x_stride) * out_elem_bytes,
  x_size * out_elem_bytes, bus_bytes)``) one after another, each continuing
  the cycle after its write completion; then FIN, then RETIRE.
- A compute LOAD of another memory (OUT) does nothing: RETIRE from s+1.

The two DMA engines as code (``t`` is the cycle the next step starts in;
``grant(t)`` the first cycle >= t in which the arbiter accepts the burst;
``L`` the latency, ``I`` the beat interval)::

    # LOAD, x_size > 0 and at least one row       # STORE, x_size > 0 and y_size > 0
    t = s + 1                                     t = s + 1
    for each row:                                 for y in range(y_size):
        t += 1                       # ROW            t += 1                   # ROW
        if pad row: t += W                            for n in bursts of row y:
        else:                                             q = grant(t)
            t += x_pad_0                                  t = q + 1 + (n-1)*I + L + 1
            for n in bursts of the row:           FIN = t; RETIRE from t + 1
                q = grant(t)
                t = q + L + (n-1)*I + 1
            t += x_pad_1
    FIN = t; RETIRE from t + 1

**Memory port** (``rtl/arbiter.py``, the DRAM model of ``DramTiming``, the
same in ``sim/dram.py`` and the cocotb memory model): in a cycle in which no
burst is in flight, the arbiter accepts the request of the first module of
``ARBITER_PRIORITY`` that requests in that cycle (so a burst is granted in
the cycle it is first requested if the port is free). A read accepted in
cycle q delivers beat k in cycle ``q + latency + k * beat_interval``; a
write accepted in q has beat k taken in ``q + 1 + k * beat_interval`` and
completes (``wr_done``) ``latency`` cycles after its last beat. The port is
free again from the cycle after the last read beat or the write completion.
``latency`` must be at least 1. Bursts never exceed ``max_burst_beats``
beats nor cross a ``page_bytes`` boundary (both are elaboration parameters
of the RTL, ``RtlParams``; latency and bandwidth belong to the memory).

The constants below are the contract; each says where it shows in the RTL.
"""
from __future__ import annotations

import dataclasses
from vta_hw.errors import ArgumentError

#: Cycles per instruction of the fetch dispatcher (one move per cycle).
FETCH_CYCLES_PER_INSN = 1
#: Entries of each of the three command queues (load, compute, store), the default of
#: ``VTAConfig.CMD_QUEUE_DEPTH``: a preset may set another depth (``_cq<n>`` in its name),
#: which the RTL (``rtl/top.py``) and ``sim.cycle`` both read from the config; 0 is the
#: rendezvous (no queue, see the module docstring).
CMD_QUEUE_DEPTH = 16
#: Cycles from a dispatch into a command queue (depth >= 1) to the first cycle its module
#: can dequeue the instruction.
CMD_QUEUE_LATENCY = 1
#: The same through the rendezvous (depth 0): the module takes the instruction in the
#: cycle fetch dispatches it, which is a cycle in which the module is in IDLE.
CMD_RENDEZVOUS_LATENCY = 0
#: Cycles from a token push to the token being poppable by the other module.
TOKEN_LATENCY = 1
#: Tokens each of the four token queues holds.
TOKEN_QUEUE_DEPTH = 32
#: Cycles from a module's dequeue (IDLE) to its first TOKENS cycle.
INSN_DECODE_CYCLES = 1
#: Cycles between uop iterations of GEMM (the core is pipelined, initiation interval 1).
GEMM_CYCLES_PER_UOP = 1
#: Cycles from the last GEMM uop issue to RETIRE (stages S1 read INP/WGT, S2 INP/WGT data
#: registered, S3 multiply and read ACC, S4 ACC data registered and add tree, S5 add and
#: write; RETIRE the cycle after S5).
GEMM_PIPELINE_DEPTH = 6
#: Cycles between uop iterations of the ALU (initiation interval 1), except MUL.
ALU_CYCLES_PER_UOP = 1
#: Cycles between uop iterations of ALU MUL (``rtl/alu.py`` ``SeqMul``: operands
#: sampled in S5, product written 5 cycles later, forwarded to the next iteration).
ALU_MUL_CYCLES_PER_UOP = 6
#: Cycles from the last ALU uop issue to RETIRE (same pipeline as GEMM).
ALU_PIPELINE_DEPTH = 6
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
        max_burst_beats: longest burst, beats. 256 is AXI4's longest INCR burst
            and what VTA's memory engine issues (``lenBits = 8`` in the Chisel
            ``VME``; Moreau et al., IEEE Micro 2019): a bulk read then pays the
            latency once per 2 KiB on a 64-bit bus, not once per 128 bytes.
        page_bytes: bursts never cross a multiple of this many bytes (AXI: 4096).

    Raises:
        ValueError: a non-positive value, or a page size that is not a power of two.
    """

    latency: int = 32
    bytes_per_cycle: int = 8
    max_burst_beats: int = 256
    page_bytes: int = 4096

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if not isinstance(v, int) or v < (0 if f.name == "latency" else 1):
                raise ArgumentError(f"DramTiming.{f.name} must be a positive int, not {v!r}")
        if self.page_bytes & (self.page_bytes - 1):
            raise ArgumentError(f"DramTiming.page_bytes must be a power of two, not {self.page_bytes}")

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
