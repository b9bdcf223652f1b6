"""Signatures shared by the modules: command-queue reads and token pops/pushes."""
from __future__ import annotations

from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from vta_hw.config import INSN_BITS


def cmd_read_signature() -> wiring.Signature:
    """A module's end of its command queue (``SyncQueue`` read side, flipped)."""
    return wiring.Signature({"r_valid": In(1), "r_ready": Out(1), "r_data": In(INSN_BITS)})


def token_pop_signature() -> wiring.Signature:
    """A consumer's end of a ``TokenQueue``."""
    return wiring.Signature({"pop_valid": In(1), "pop_ready": Out(1)})


def token_push_signature() -> wiring.Signature:
    """A producer's end of a ``TokenQueue``."""
    return wiring.Signature({"push_valid": Out(1), "push_ready": In(1)})
