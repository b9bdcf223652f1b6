"""Bad programs: each raises its own error class, naming instruction, field, value and limit."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import Builder

from sim import errors
from sim.functional import run
from vta_hw import isa
from vta_hw.isa import Alu, Finish, Gemm, Load, MemId, Store, Uop

INP, WGT, UOP, ACC, OUT = MemId.INP, MemId.WGT, MemId.UOP, MemId.ACC, MemId.OUT


def prog(cfg, insns, uops=(), n_inp=4):
    b = Builder(cfg)
    b.buf("a", np.ones((n_inp, cfg.BATCH, cfg.BLOCK_IN), np.int8))
    b.uops(uops)
    return b.program(insns)


def raises(cls, p, *fragments, dram=None, index=None, field=None):
    with pytest.raises(cls) as info:
        run(p, dram)
    e = info.value
    assert type(e) is cls
    msg = str(e)
    for f in fragments:
        assert f in msg, f"{f!r} not in {msg!r}"
    if index is not None:
        assert e.insn_index == index and msg.startswith(f"instruction {index}: ")
    if field is not None:
        assert e.field == field and field in msg
    assert isinstance(e, errors.BadProgramError) and isinstance(e, errors.SimError)
    return e


def test_unknown_opcode_in_the_image(small_cfg):
    p = prog(small_cfg, [Load(mem=INP), Finish()])
    img = p.dram_image()
    img[p.insn_base] = (img[p.insn_base] & 0xF8) | 7  # opcode 7 in instruction 0
    before = img.copy()
    e = raises(errors.UnknownOpcodeError, p, "opcode 7 is unknown", "ALU=4", dram=img, index=0,
               field="opcode")
    assert e.value == 7 and e.limit == 4
    assert np.array_equal(img, before)


def test_unknown_memory_id_in_the_image(small_cfg):
    p = prog(small_cfg, [Store(), Finish()])
    img = p.dram_image()
    img[p.insn_base] |= 5 << 7 & 0xFF  # mem id bits 9:7 -> 5 (bits 7..8 in byte 0, 9 in byte 1)
    img[p.insn_base + 1] |= (5 << 7) >> 8
    raises(errors.UnknownOpcodeError, p, "STORE mem 5 is unknown", "OUT=4", dram=img, index=0,
           field="mem")


def test_field_too_wide_for_the_config(small_cfg):
    # uop_bgn is log2(uop_depth)=8 bits on this preset
    p = prog(small_cfg, [Gemm(uop_bgn=256, uop_end=256), Finish()])
    e = raises(errors.FieldRangeError, p, "Gemm.uop_bgn=256", "8-bit field", "0..255",
               index=0, field="uop_bgn")
    assert e.value == 256 and e.limit == 255


def test_uop_field_too_wide(small_cfg):
    p = prog(small_cfg, [Finish()], uops=[Uop(dst=1 << 20)])
    e = raises(errors.FieldRangeError, p, "uop 0: dst=1048576", "7-bit field")
    assert e.insn_index is None and e.field == "uops[0].dst"


@pytest.mark.parametrize("insn,field,fragment", [
    (Load(mem=OUT, x_size=1, y_size=1), "mem", "LOAD mem=OUT"),
    (Load(mem=UOP, x_size=1, y_size=1, x_pad_1=1), "x_pad_1", "uop loads take no padding"),
    (Store(mem=INP, x_size=1, y_size=1), "mem", "only the OUT buffer can be stored"),
    (Store(x_size=1, y_size=1, y_pad_0=2), "y_pad_0", "stores take no padding"),
])
def test_forbidden_field_values(small_cfg, insn, field, fragment):
    raises(errors.FieldRangeError, prog(small_cfg, [insn, Finish()]), fragment, index=0,
           field=field)


@pytest.mark.parametrize("insn,flag", [
    (Load(mem=INP, pop_prev=True), "pop_prev"), (Load(mem=WGT, push_prev=True), "push_prev"),
    (Store(pop_next=True), "pop_next"), (Store(push_next=True), "push_next")])
def test_dependency_flag_the_module_lacks(small_cfg, insn, flag):
    mod = "store" if isinstance(insn, Store) else "load"
    raises(errors.DependencyFlagError, prog(small_cfg, [insn, Finish()]),
           f"runs on the {mod} module, which has no {flag} queue", index=0, field=flag)


def test_load_past_the_sram(small_cfg):
    depth = small_cfg.inp_depth  # 256
    p = prog(small_cfg, [Load(mem=INP, sram_base=depth - 3, y_size=1, x_size=2, x_stride=2,
                              x_pad_1=1, y_pad_1=1), Finish()])
    e = raises(errors.SramIndexError, p, f"[{depth - 3}, {depth + 2}]", "256 entries",
               index=0, field="sram_base")
    assert e.value == depth + 2 and e.limit == depth


def test_store_past_the_out_sram(small_cfg):
    p = prog(small_cfg, [Store(sram_base=small_cfg.out_depth - 1, y_size=2, x_size=1,
                               x_stride=1), Finish()])
    raises(errors.SramIndexError, p, "OUT buffer has 128 entries", index=0, field="sram_base")


def test_dram_out_of_bounds(small_cfg):
    p = prog(small_cfg, [Load(mem=WGT, dram_base=10, y_size=3, x_size=1, x_stride=1000),
                         Finish()])
    e = raises(errors.DramBoundsError, p, "dram_base=10", f"image has {p.dram_bytes} bytes",
               index=0, field="dram_base")
    assert e.value == (10 + 2 * 1000 + 1) * 16


def test_store_out_of_bounds_leaves_caller_image(small_cfg):
    p = prog(small_cfg, [Store(dram_base=10**5, y_size=1, x_size=1, x_stride=1), Finish()])
    img = p.dram_image()
    before = img.copy()
    raises(errors.DramBoundsError, p, dram=img, index=0, field="dram_base")
    assert np.array_equal(img, before)


def test_truncated_image(small_cfg):
    p = prog(small_cfg, [Finish()])
    e = raises(errors.DramBoundsError, p, "instruction stream", dram=p.dram_image()[:p.insn_base])
    assert e.field == "insn_base" and e.insn_index is None


@pytest.mark.parametrize("bgn,end,fragment", [
    (5, 4, "uop_end=4 < uop_bgn=5"), (0, 257, "past the uop buffer of 256 entries")])
def test_uop_range(small_cfg, bgn, end, fragment):
    p = prog(small_cfg, [Alu(uop_bgn=bgn, uop_end=end, iter_out=1, iter_in=1), Finish()])
    raises(errors.UopRangeError, p, fragment, index=0, field="uop_end")


def gemm_index_program(cfg, insn):
    b = Builder(cfg)
    ub = b.uops([Uop(0, 0, 0), Uop(1, 1, 1)])
    return b.program([Load(mem=UOP, dram_base=ub, y_size=1, x_size=2, x_stride=2), insn,
                      Finish()])


@pytest.mark.parametrize("insn,field,value,limit", [
    (Gemm(uop_bgn=0, uop_end=2, iter_out=2, iter_in=1, dst_factor_out=127), "dst", 128, 128),
    (Gemm(uop_bgn=0, uop_end=2, iter_out=1, iter_in=3, src_factor_in=200), "src", 400, 256),
    (Gemm(uop_bgn=0, uop_end=2, iter_out=1, iter_in=3, wgt_factor_in=40), "wgt", 80, 64),
    (Alu(uop_bgn=0, uop_end=2, iter_out=3, iter_in=1, src_factor_out=100), "src", 200, 128),
])
def test_sram_index_in_some_loop_iteration(small_cfg, insn, field, value, limit):
    e = raises(errors.SramIndexError, gemm_index_program(small_cfg, insn),
               f"computes {field} index {value}", f"{limit} entries", index=1, field=field)
    assert e.value == value and e.limit == limit


def test_reset_and_imm_forms_do_not_check_unused_indices(small_cfg):
    for insn in (Gemm(reset=True, uop_bgn=0, uop_end=2, iter_out=1, iter_in=3, src_factor_in=200),
                 Alu(use_imm=True, uop_bgn=0, uop_end=2, iter_out=3, iter_in=1,
                     src_factor_out=100)):
        assert run(gemm_index_program(small_cfg, insn)).finished


def test_index_error_does_not_touch_the_srams(small_cfg):
    """The machine checks every iteration before it writes anything."""
    from sim.machine import Machine
    m = Machine(small_cfg)
    m.uop[0] = (0, 0, 0)
    m.acc[:] = 5
    with pytest.raises(errors.SramIndexError):
        m.execute(Alu(uop_bgn=0, uop_end=1, iter_out=200, iter_in=1, dst_factor_out=1,
                      use_imm=True, imm=1), 0, np.zeros(64, np.uint8))
    assert (m.acc == 5).all() and not m.out.any()


@pytest.mark.parametrize("insns,index,fragment", [
    ([Load(mem=INP)], 0, "its last instruction has opcode LOAD"),
    ([], None, "the program has no instructions"),
    ([Finish(), Store(), Finish()], 0, "FINISH (opcode 3) at 0 is followed by 2 instruction(s)"),
    ([Finish(), Finish()], 0, "FINISH (opcode 3) at 0 is followed by 1"),
])
def test_finish_structure(small_cfg, insns, index, fragment):
    e = raises(errors.ProgramStructureError, prog(small_cfg, insns), fragment, field="opcode")
    assert e.insn_index == index


def test_deadlock_names_instruction_module_and_queue(small_cfg):
    p = prog(small_cfg, [Load(mem=INP, pop_next=True), Store(pop_prev=True),
                         Load(mem=UOP), Finish(pop_prev=True)])
    e = raises(errors.DeadlockError, p, "load at instruction 0 waits on c2l",
               "compute at instruction 3 waits on l2c", "store at instruction 1 waits on c2s",
               index=0)
    assert e.blocked == [("load", 0, "c2l"), ("compute", 3, "l2c"), ("store", 1, "c2s")]


def test_deadlock_from_a_full_command_queue(small_cfg):
    """Fine with unbounded queues and with 1-entry command queues (the first store waits
    in the module, the second in its queue); without command queues (depth 0, the
    rendezvous) fetch blocks on the second store before the LOAD the first store waits
    on is fetched."""
    insns = [Store(pop_prev=True), Store(), Load(mem=UOP, push_next=True), Finish()]
    p = prog(small_cfg, insns)
    assert run(p, cmd_queue_depth=None).finished
    assert run(p, cmd_queue_depth=1).finished
    with pytest.raises(errors.DeadlockError, match="fetch at instruction 1 waits on store "
                                                   r"command queue \(full\)"):
        run(p, cmd_queue_depth=0)


def test_deadlock_from_a_full_token_queue(small_cfg):
    insns = [Load(mem=INP, push_next=True), Load(mem=INP, push_next=True),
             Load(mem=UOP, pop_prev=True), Load(mem=UOP, pop_prev=True), Finish()]
    p = prog(small_cfg, insns)
    assert run(p).finished
    assert run(p, token_queue_depth=1).finished  # compute drains between pushes
    # A queue that can never hold the token: load's push waits forever.
    with pytest.raises(errors.DeadlockError, match=r"l2c \(full: 0 tokens\)"):
        run(p, token_queue_depth=0)


def test_leftover_tokens_are_reported(small_cfg):
    p = prog(small_cfg, [Load(mem=INP, push_next=True), Load(mem=INP, push_next=True),
                         Store(push_prev=True), Finish()])
    res = run(p)
    assert res.finished
    assert res.leftover_tokens == {"l2c": 2, "c2l": 0, "c2s": 0, "s2c": 1}
    assert res.warnings == [
        "2 token(s) left in queue l2c at the end; the pushes and pops of the program do not "
        "balance",
        "1 token(s) left in queue s2c at the end; the pushes and pops of the program do not "
        "balance"]


def test_error_in_a_late_instruction_leaves_caller_image(small_cfg):
    """A STORE runs (into the copy) before a later GEMM fails; the caller's image is intact."""
    b = Builder(small_cfg)
    b.buf("o", shape=(2, 1, 4), kind="output")
    ub = b.uops([Uop(0, 0, 0)])
    p = b.program([
        Load(mem=UOP, dram_base=ub, y_size=1, x_size=1, x_stride=1),
        Alu(uop_bgn=0, uop_end=1, iter_out=1, iter_in=1, use_imm=True, imm=9, push_next=True),
        Store(pop_prev=True, push_prev=True, dram_base=b.at("o", "out"), y_size=1, x_size=1,
              x_stride=1),
        Gemm(pop_next=True, uop_bgn=0, uop_end=1, iter_out=3, iter_in=1, dst_factor_out=100),
        Finish()])
    img = p.dram_image()
    before = img.copy()
    raises(errors.SramIndexError, p, dram=img, index=3, field="dst")
    assert np.array_equal(img, before)


def test_errors_are_distinct_classes():
    leaves = [errors.UnknownOpcodeError, errors.FieldRangeError, errors.DependencyFlagError,
              errors.SramIndexError, errors.DramBoundsError, errors.UopRangeError,
              errors.ProgramStructureError, errors.DeadlockError]
    assert len(set(leaves)) == len(leaves)
    assert all(issubclass(c, errors.BadProgramError) for c in leaves)
    assert not issubclass(isa.DecodeError, errors.SimError)
