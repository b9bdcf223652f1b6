"""The RTL driver itself: back-to-back runs leak no state, cycle timeout, reports, waveforms."""
import dataclasses

import numpy as np
import pytest
from rtl_check import SMALL, check
from rtl_programs import DIRECTED

from driver.rtl import RtlError, run_programs
from driver.rtl.reference import mismatch_report
from sim.random_program import random_program
from vta_hw.isa import Finish


def test_back_to_back_no_state_leaks(rtl_config):
    """A, B, A, A: every A gives the same DRAM image and the same cycle count. A follows
    the SRAM contract (``vta_hw.isa``: it reads only SRAM it wrote), so what B leaves in
    the SRAMs cannot reach its results."""
    cfg = rtl_config(SMALL)
    a = DIRECTED["alu_mul"](cfg)
    b = random_program(cfg, 7)[0]
    res = check(cfg, [(a, None), (b, None), (a, None), (a, None)], ["A", "B", "A2", "A3"],
                tag="back-to-back")
    assert res[0].cycles == res[2].cycles == res[3].cycles
    assert res[0].busy == res[2].busy == res[3].busy
    assert np.array_equal(res[0].dram, res[2].dram) and np.array_equal(res[0].dram, res[3].dram)


def test_timeout_is_reported(rtl_config):
    """A FINISH that waits for a token nobody pushes is a deadlock the RTL ends at once;
    a program longer than ``max_cycles`` is a timeout."""
    from sim.errors import DeadlockError
    from vta_hw.isa import Gemm
    cfg = rtl_config(SMALL)
    p = DIRECTED["acc_pad_all"](cfg)
    stuck = dataclasses.replace(p, insns=p.insns[:-1] + [Finish(pop_prev=True)])
    with pytest.raises(DeadlockError, match=r"program 0 of 1 .*no progress"):
        run_programs(cfg, [(stuck, None)], max_cycles=5000)
    long = dataclasses.replace(p, insns=p.insns[:-1] + [
        Gemm(reset=True, uop_bgn=0, uop_end=1, iter_out=100, iter_in=100), Finish()])
    with pytest.raises(RtlError, match=r"program 0 of 1 .*timeout: done not raised within "
                                       r"5000 cycles"):
        run_programs(cfg, [(long, None)], max_cycles=5000)


def test_mismatch_report_names_address_and_writer():
    from vta_hw.config import load_config
    cfg = load_config(SMALL)
    p = DIRECTED["acc_pad_x_pad_0"](cfg)
    want = p.dram_image()
    got = want.copy()
    out = p.buffer("out")
    got[out.offset + 5] ^= 1
    msg = mismatch_report(p, got, want, vcd="/tmp/x.vcd", label="demo")
    assert f"first at DRAM byte {out.offset + 5}" in msg
    assert "STORE" in msg and "instruction" in msg and "/tmp/x.vcd" in msg
    assert mismatch_report(p, want, want.copy()) is None


def test_config_mismatch_rejected(rtl_config):
    from vta_hw.config import load_config
    cfg = rtl_config(SMALL)
    other = DIRECTED["gemm_loops"](load_config("1x8_i8w8a32_11_12_13_14"))
    with pytest.raises(ValueError, match="program 0 is for config 1x8"):
        run_programs(cfg, [(other, None)])


@pytest.mark.slow
def test_waveform_written(rtl_config):
    cfg = rtl_config(SMALL)
    res = run_programs(cfg, [(DIRECTED["acc_pad_all"](cfg), None)], vcd=True)
    assert res[0].vcd is not None and res[0].vcd.stat().st_size > 1000


def test_program_file_runs(rtl_config, tmp_path):
    """A program file goes in by path; its image comes from the file."""
    cfg = rtl_config(SMALL)
    p = DIRECTED["acc_pad_y_pad_1"](cfg)
    path = tmp_path / "acc.vtaprog"
    p.save(path)
    by_path, = run_programs(cfg, [(str(path), None)])
    direct, = check(cfg, [(p, None)], ["acc_pad_y_pad_1"], tag="file")
    assert np.array_equal(by_path.dram, direct.dram) and by_path.cycles == direct.cycles


def test_burst_monitor_matches_cycle_model(rtl_config):
    """The monitor's bursts (grant cycle, beats, direction) equal ``sim.cycle``'s, one by one."""
    from sim import cycle
    cfg = rtl_config(SMALL)
    p = random_program(cfg, 11)[0]
    r, = run_programs(cfg, [(p, None)])
    first = r.bursts[0]
    assert first[:2] == (1, p.insn_base) and not first[3]   # fetch, granted in cycle 1
    trace = cycle.run(p, values=False, trace=True).trace
    assert [(g, n, w) for _, g, _, n, w in trace.bursts] == [(c, n, w) for c, _, n, w in r.bursts]
