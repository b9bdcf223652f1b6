"""The instruction state machine that the load and store modules share.

IDLE dequeues an instruction from the module's command queue into ``insn``
(``DECODE_CYCLES`` = 1: TOKENS follows in the next cycle) -> TOKENS waits
for the instruction's one pop token, pops it and starts the DMA engine ->
DMA waits for the engine's ``done`` -> RETIRE pushes the instruction's one
push token once its queue has room -> IDLE. ``busy`` is high outside IDLE
(the BUSY counter of ``control``); ``stall`` is high while TOKENS waits for
its token or RETIRE for room (``control``'s no-progress watchdog reads it). ``vta_hw.timing`` has the cycle counts;
the compute module (``compute.py``) runs the same flow with two tokens each
way and more kinds of work.
"""
from __future__ import annotations

from amaranth import Module, Value

#: Cycles from a dequeue in IDLE to the first TOKENS cycle (``timing.INSN_DECODE_CYCLES``).
DECODE_CYCLES = 1


def dma_module_fsm(m: Module, unit, insn: Value, dma, *, pop: Value, pop_port,
                   push: Value, push_port) -> None:
    """Add the state machine to ``m``.

    Args:
        unit: the module component (its ``cmd`` command-queue port, ``busy`` and
            ``stall`` outputs).
        insn: the instruction register the state machine loads (``INSN_BITS`` wide).
        dma: the DMA engine (``start`` and ``done``).
        pop, pop_port: the instruction's pop flag and the token queue port it pops.
        push, push_port: the instruction's push flag and the token queue port it pushes.
    """
    m.d.comb += unit.busy.eq(1)
    with m.FSM():
        with m.State("IDLE"):
            m.d.comb += [unit.busy.eq(0), unit.cmd.r_ready.eq(1)]
            with m.If(unit.cmd.r_valid):
                m.d.sync += insn.eq(unit.cmd.r_data)
                m.next = "TOKENS"
        with m.State("TOKENS"):
            m.d.comb += unit.stall.eq(pop & ~pop_port.pop_valid)
            with m.If(~pop | pop_port.pop_valid):
                m.d.comb += [pop_port.pop_ready.eq(pop), dma.start.eq(1)]
                m.next = "DMA"
        with m.State("DMA"):
            with m.If(dma.done):
                m.next = "RETIRE"
        with m.State("RETIRE"):
            m.d.comb += unit.stall.eq(push & ~push_port.push_ready)
            with m.If(~push | push_port.push_ready):
                m.d.comb += push_port.push_valid.eq(push)
                m.next = "IDLE"
