"""A dependency token queue: one-bit tokens, so an up/down counter.

A push in cycle t is visible to ``pop_valid`` in cycle t+1 (TOKEN_LATENCY).
``push_ready`` is ``count < depth`` and ``pop_valid`` is ``count > 0``, both
from the count at the start of the cycle; a push and a pop in the same cycle
both happen.
"""

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

#: Cycles from a push to the token being poppable (``timing.TOKEN_LATENCY``).
LATENCY = 1


class TokenQueue(wiring.Component):
    """Holds up to ``depth`` tokens.

    Raises:
        ValueError: ``depth`` is not a positive int.
    """

    push_valid: In(1)
    push_ready: Out(1)
    pop_valid: Out(1)
    pop_ready: In(1)

    def __init__(self, depth: int):
        if not isinstance(depth, int) or depth < 1:
            raise ValueError(f"depth must be a positive int, not {depth!r}")
        self.depth = depth
        super().__init__()
        self.count = Signal(range(depth + 1))

    def elaborate(self, platform):
        m = Module()
        m.d.comb += [self.push_ready.eq(self.count != self.depth),
                     self.pop_valid.eq(self.count != 0)]
        push = self.push_valid & self.push_ready
        pop = self.pop_ready & self.pop_valid
        with m.If(push & ~pop):
            m.d.sync += self.count.eq(self.count + 1)
        with m.Elif(pop & ~push):
            m.d.sync += self.count.eq(self.count - 1)
        return m
