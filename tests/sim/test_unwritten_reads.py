"""The SRAM contract (``vta_hw.isa``): a read of SRAM the program has not written is
reported by both simulators with its instruction index (a warning; an error when
strict), and a program that writes before it reads gets no report."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from sim import cycle, functional
from sim.errors import UnwrittenReadError, UnwrittenReadWarning
from sim.random_program import random_program
from vta_hw.config import load_config
from vta_hw.isa import Alu, AluOp, Finish, Gemm, Load, MemId, Store, Uop
from vta_hw.program import DramLayout

SMALL = "1x4_i8w8a32_10_10_10_11_bus32"


def _program(insns, uops=()):
    cfg = load_config(SMALL)
    lay = DramLayout(cfg)
    lay.alloc("x", (4, cfg.BATCH, cfg.BLOCK_IN), "int8", "input",
              np.ones((4, cfg.BATCH, cfg.BLOCK_IN), np.int8))
    ub = lay.alloc_uops(max(1, len(uops)))
    return lay.finish([Load(mem=MemId.UOP, dram_base=ub, y_size=1, x_size=len(uops),
                            x_stride=len(uops))] + insns, list(uops)), lay


CASES = [
    # GEMM reads INP 0..1 and WGT 0, never loaded, and accumulates into ACC 0 unreset
    ([Gemm(uop_bgn=0, uop_end=2, iter_out=1, iter_in=1), Finish()],
     [Uop(0, 0, 0), Uop(0, 1, 0)], 1, "GEMM reads 2 INP entries (src; first: entry 0)"),
    # ALU src reads ACC 3, which the reset before it did not write (it wrote 0..1)
    ([Gemm(reset=True, uop_bgn=0, uop_end=1, iter_out=2, iter_in=1, dst_factor_out=1),
      Alu(alu_op=AluOp.ADD, uop_bgn=1, uop_end=2, iter_out=1, iter_in=1), Finish()],
     [Uop(0, 0, 0), Uop(0, 3, 0)], 2, "ALU reads 1 ACC entry (src; first: entry 3)"),
    # STORE of OUT entries no GEMM/ALU wrote
    ([Store(sram_base=5, y_size=1, x_size=2, x_stride=2), Finish()], [Uop(0, 0, 0)], 1,
     "STORE reads 2 OUT entries (entries; first: entry 5)"),
]


@pytest.mark.parametrize("run", [functional.run, cycle.run], ids=["functional", "cycle"])
@pytest.mark.parametrize("insns,uops,index,text", CASES)
def test_read_of_unwritten_sram_is_reported(run, insns, uops, index, text):
    p, _ = _program(insns, uops)
    with pytest.warns(UnwrittenReadWarning, match=re.escape(f"instruction {index}: {text}")):
        r = run(p)
    if run is functional.run:
        assert any(w.startswith(f"instruction {index}: {text}") for w in r.warnings)
    with pytest.raises(UnwrittenReadError) as e:
        run(p, strict_sram=True)
    assert e.value.insn_index == index and text in str(e.value)


def test_writes_before_reads_are_not_reported():
    """Loads (pads included), a reset and a GEMM, an ALU and a store: all read what the
    program wrote; random programs (their prologue writes every window) neither."""
    cfg = load_config(SMALL)
    p, lay = _program([
        Load(mem=MemId.INP, dram_base=0, y_size=1, x_size=1, x_stride=1, x_pad_1=1),
        Load(mem=MemId.WGT, dram_base=0, y_size=1, x_size=1, x_stride=1, push_next=True),
        Gemm(reset=True, uop_bgn=0, uop_end=1, iter_out=2, iter_in=1, dst_factor_out=1),
        Gemm(uop_bgn=0, uop_end=2, iter_out=1, iter_in=1, pop_prev=True),
        Alu(alu_op=AluOp.MAX, uop_bgn=0, uop_end=2, iter_out=1, iter_in=1, push_next=True),
        Store(y_size=1, x_size=2, x_stride=2, pop_prev=True), Finish()],
        [Uop(0, 0, 0), Uop(1, 1, 0)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert functional.run(p, strict_sram=True).warnings == []
        cycle.run(p, strict_sram=True)
        for seed in range(20):
            q, _ = random_program(cfg, seed)
            functional.run(q, strict_sram=True)


def test_vta_sim_prints_the_report(tmp_path):
    from tests.cli_util import run_cli
    p, _ = _program(*CASES[2][:2])
    p.save(tmp_path / "p.vtaprog")
    for model in ("functional", "cycle"):
        r = run_cli("sim", tmp_path / "p.vtaprog", "--model", model)
        assert r.exit_code == 0, r.output
        assert "warning: instruction 1: STORE reads 2 OUT entries" in r.output
