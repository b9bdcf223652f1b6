"""A board run that ends on an error status is reported as the simulators report the
program (``driver.rtl.faults``): the driver reads ERROR and ERROR_INSN through the bridge
(registers 8 and 9). The SoC is the protocol model, playing an accelerator that ends
with the error code the RTL raises for the program."""
from __future__ import annotations

import pytest

from driver.backends.fpga import FpgaBackend, FpgaDevice
from fpga import protocol as P
from sim import cycle, functional
from sim.errors import DeadlockError, UnknownOpcodeError
from tests.fpga.model_soc import ModelSoC
from vta_hw.config import load_config
from vta_hw.isa import Finish, Gemm, Load, MemId, Store
from vta_hw.program import DramLayout
from vta_hw.rtl.control import ERR_NO_PROGRESS, ERR_UNDEFINED, ERROR_QUIET_BIT

SMALL = "1x4_i8w8a32_10_10_10_11_bus32"


def ends_with(code: int, insn: int, quiet: int = 0):
    """``on_start``: the accelerator ends at once with ERROR = code (and the quiet flags)."""
    def on_start(soc):
        soc.regs[P.REG_ERROR] = code | quiet << ERROR_QUIET_BIT
        soc.regs[P.REG_ERROR_INSN] = insn
    return on_start


def backend(on_start) -> FpgaBackend:
    return FpgaBackend(load_config(SMALL),
                       device=FpgaDevice(ModelSoC(mem_bytes=1 << 16, on_start=on_start),
                                         timeout_s=0.01))


def test_undefined_instruction_on_the_board_is_the_simulators_error():
    p = DramLayout(load_config(SMALL)).finish([Load(mem=MemId.UOP), Store(), Finish()], [])
    img = p.dram_image()
    at = p.insn_base + 16  # instruction 1: memory id (bits 9:7) 5, undefined
    word = int.from_bytes(img[at:at + 2].tobytes(), "little") & ~(7 << 7) | 5 << 7
    img[at:at + 2] = list(word.to_bytes(2, "little"))
    with pytest.raises(UnknownOpcodeError) as sim_err:
        functional.run(p, img)
    with pytest.raises(UnknownOpcodeError, match="fpga: the RTL stopped at an undefined "
                                                 "instruction: instruction 1: STORE mem 5") as e:
        backend(ends_with(ERR_UNDEFINED, 1)).run(p, img)
    assert e.value.insn_index == sim_err.value.insn_index == 1


def test_no_progress_on_the_board_is_the_cycle_models_deadlock():
    depth = load_config(SMALL).CMD_QUEUE_DEPTH
    insns = ([Store(pop_prev=True)] + [Store() for _ in range(depth + 1)]
             + [Gemm(push_next=True), Finish()])
    p = DramLayout(load_config(SMALL)).finish(insns, [])
    with pytest.raises(DeadlockError) as sim_err:
        cycle.run(p)
    with pytest.raises(DeadlockError, match=f"fpga: the RTL made no progress .* dispatching "
                                            f"{depth + 1} .*fetch quiet") as e:
        backend(ends_with(ERR_NO_PROGRESS, depth + 1, quiet=0b1111)).run(p, p.dram_image())
    assert e.value.insn_index == sim_err.value.insn_index == 0


def test_a_run_that_ends_at_finish_reads_its_dram():
    p = DramLayout(load_config(SMALL)).finish([Finish()], [])
    r = backend(None).run(p, p.dram_image())
    assert r.cycles == 0 and r.dram.size == p.dram_image().size
