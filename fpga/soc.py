"""The SoC: the accelerator, block RAM standing in for DRAM, and a UART host bridge.

``SoC(cfg, mem_bytes=..., clk_hz=..., divisor=...)`` has the pins ``rx``
(input, idle high), ``tx`` (output) and ``done`` (the accelerator's ``irq``,
for an LED). A host speaks ``fpga.protocol`` over the UART at
``clk_hz / divisor`` baud. The block RAM (``fpga.memory``) holds a program's
whole DRAM image at byte 0; it answers bursts as
``DramTiming(latency=2, bytes_per_cycle=cfg.bus_bytes, max_burst_beats=16)``
(``soc_dram_timing``), which is what ``sim.cycle`` must be given to predict the
SoC's cycle counts. The accelerator's byte addresses are ``params.addr_bits``
wide (``RtlParams``, 32 by default); the block RAM wraps addresses modulo its
size, so every width from ``soc_addr_bits(mem_bytes, page_bytes)`` up behaves
the same (``vta_hw.rtl.memport`` has the rule), and the narrowest is the
smallest (``fpga.top`` uses it on iCE40 boards).

``soc_verilog`` gives the Verilog (module ``soc``, ports ``clk``, ``rst``,
``rx``, ``tx``, ``done``) that the cocotb testbench and the Vivado project use.
"""

import warnings

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from fpga.bridge import HostBridge
from fpga.memory import BlockRamMemory
from fpga.protocol import IDLE_BYTES
from fpga.uart import UartRx, UartTx
from vta_hw.config import VTAConfig
from vta_hw.rtl.top import VTA, RtlParams
from vta_hw.timing import DramTiming


#: The SoC's burst rules. Its block RAM answers 2 cycles after a request, so long
#: bursts buy nothing there, while fetch's staging queue holds one burst of
#: instructions (``max_burst_beats / beats per instruction + 1`` entries of 128 bits,
#: LUT RAM on the FPGA): 16 beats keeps it small.
SOC_PARAMS = RtlParams(max_burst_beats=16)


def soc_dram_timing(cfg: VTAConfig, params: RtlParams | None = None) -> DramTiming:
    """The DRAM timing of the SoC's block RAM (``fpga.memory``), for ``sim.cycle``."""
    p = params or SOC_PARAMS
    return DramTiming(latency=2, bytes_per_cycle=cfg.bus_bytes,
                      max_burst_beats=p.max_burst_beats, page_bytes=p.page_bytes)


def soc_addr_bits(mem_bytes: int, page_bytes: int) -> int:
    """The fewest address bits that reach a ``mem_bytes``-byte memory (``RtlParams.addr_bits``
    is at least log2(``page_bytes``))."""
    return (max(mem_bytes, page_bytes) - 1).bit_length()


class SoC(wiring.Component):
    """Raises ValueError: bad ``mem_bytes`` or ``divisor``, a memory larger than
    ``2**params.addr_bits`` bytes (the message names it), or a config the accelerator
    RTL does not build."""

    rx: In(1, init=1)
    tx: Out(1, init=1)
    done: Out(1)

    def __init__(self, cfg: VTAConfig, *, mem_bytes: int, clk_hz: int, divisor: int,
                 params: RtlParams | None = None):
        self.cfg, self.mem_bytes, self.clk_hz, self.divisor = cfg, mem_bytes, int(clk_hz), divisor
        self.params = p = params or SOC_PARAMS
        if isinstance(mem_bytes, int) and mem_bytes > 2 ** p.addr_bits:
            raise ValueError(f"a {mem_bytes}-byte memory needs RtlParams.addr_bits >= "
                             f"{soc_addr_bits(mem_bytes, p.page_bytes)}, not {p.addr_bits}")
        # construct now so that parameter errors surface here
        self.ram = BlockRamMemory(cfg.BUS_WIDTH, p.max_burst_beats, mem_bytes, p.addr_bits)
        self.vta = VTA(cfg, p)
        self.uart_rx, self.uart_tx = UartRx(divisor), UartTx(divisor)
        self.bridge = HostBridge(mem_bytes, clk_hz, idle_cycles=divisor * 10 * IDLE_BYTES)
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.submodules.vta = vta = self.vta
        m.submodules.ram = ram = self.ram
        m.submodules.uart_rx = rx = self.uart_rx
        m.submodules.uart_tx = tx = self.uart_tx
        m.submodules.bridge = br = self.bridge
        wiring.connect(m, vta.mem, ram.mem)
        wiring.connect(m, br.csr, vta.csr)
        m.d.comb += [
            rx.rx.eq(self.rx), self.tx.eq(tx.tx), self.done.eq(vta.irq), br.irq.eq(vta.irq),
            br.rx_data.eq(rx.data), br.rx_valid.eq(rx.valid), rx.ready.eq(br.rx_ready),
            tx.data.eq(br.tx_data), tx.valid.eq(br.tx_valid), br.tx_ready.eq(tx.ready),
            ram.host_req.eq(br.host_req), ram.host_we.eq(br.host_we),
            ram.host_addr.eq(br.host_addr), ram.host_wdata.eq(br.host_wdata),
            br.host_rdata.eq(ram.host_rdata), br.host_ack.eq(ram.host_ack),
        ]
        return m


def soc_verilog(cfg: VTAConfig, *, mem_bytes: int, clk_hz: int, divisor: int) -> str:
    """Verilog of ``SoC`` as module ``soc`` (ports clk, rst, rx, tx, done)."""
    from amaranth.back import verilog
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return verilog.convert(SoC(cfg, mem_bytes=mem_bytes, clk_hz=clk_hz, divisor=divisor),
                               name="soc", emit_src=False)
