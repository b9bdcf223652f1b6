"""8N1 UART receiver and transmitter, ``divisor`` clock cycles per bit.

``UartRx``: ``rx`` is the pin (idle high); a received byte appears on
``data`` with ``valid`` high until the consumer raises ``ready`` (one byte of
buffering; a byte that completes while the previous one is unread replaces it
and sets ``overrun`` for one cycle). ``UartTx``: the byte on ``data`` is taken
when ``valid`` and ``ready`` are both high; ``tx`` is the pin.
"""

from amaranth import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out


def _check_divisor(divisor) -> None:
    if not isinstance(divisor, int) or divisor < 4:
        raise ValueError(f"divisor must be an int of at least 4 cycles per bit, not {divisor!r}")


class UartRx(wiring.Component):
    rx: In(1, init=1)
    data: Out(8)
    valid: Out(1)
    ready: In(1)
    overrun: Out(1)

    def __init__(self, divisor: int):
        _check_divisor(divisor)
        self.divisor = divisor
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        pin = Signal(init=1)
        m.submodules.sync_rx = FFSynchronizer(self.rx, pin, init=1)
        timer = Signal(range(self.divisor * 3 // 2 + 1))
        bits = Signal(4)
        shift = Signal(8)
        m.d.sync += self.overrun.eq(0)
        with m.If(self.valid & self.ready):
            m.d.sync += self.valid.eq(0)
        with m.FSM():
            with m.State("IDLE"):
                with m.If(~pin):
                    # sample the middle of bit 0: 1.5 bit times after the start edge
                    m.d.sync += [timer.eq(self.divisor * 3 // 2 - 1), bits.eq(0)]
                    m.next = "DATA"
            with m.State("DATA"):
                with m.If(timer != 0):
                    m.d.sync += timer.eq(timer - 1)
                with m.Else():
                    m.d.sync += [shift.eq(Cat(shift[1:], pin)),
                                 bits.eq(bits + 1), timer.eq(self.divisor - 1)]
                    with m.If(bits == 7):
                        m.next = "STOP"
            with m.State("STOP"):
                with m.If(timer != 0):
                    m.d.sync += timer.eq(timer - 1)
                with m.Else():
                    with m.If(pin):  # a valid stop bit; otherwise a framing error: drop it
                        m.d.sync += [self.data.eq(shift), self.valid.eq(1),
                                     self.overrun.eq(self.valid & ~self.ready)]
                    m.next = "WAIT_IDLE"
            with m.State("WAIT_IDLE"):
                with m.If(pin):
                    m.next = "IDLE"
        return m


class UartTx(wiring.Component):
    tx: Out(1, init=1)
    data: In(8)
    valid: In(1)
    ready: Out(1)

    def __init__(self, divisor: int):
        _check_divisor(divisor)
        self.divisor = divisor
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        timer = Signal(range(self.divisor))
        bits = Signal(4)
        shift = Signal(10, init=0x3FF)
        m.d.comb += [self.tx.eq(shift[0]), self.ready.eq(bits == 0)]
        with m.If(bits == 0):
            with m.If(self.valid):
                m.d.sync += [shift.eq((self.data << 1) | (1 << 9)), bits.eq(10),
                             timer.eq(self.divisor - 1)]
        with m.Elif(timer != 0):
            m.d.sync += timer.eq(timer - 1)
        with m.Else():
            m.d.sync += [shift.eq((shift >> 1) | (1 << 9)), bits.eq(bits - 1),
                         timer.eq(self.divisor - 1)]
        return m
