"""The code generator's per-instruction shortcuts give what the plain forms give:
``with_flags`` against ``dataclasses.replace``, the uop cache keyed by list identity
against equal sequences in other lists, and shared GEMM records in a built program."""
import dataclasses
import itertools

import pytest

from compiler.codegen.vta import alu_pragma, codegen
from compiler.codegen.vta.tokens import with_flags
from compiler.codegen.vta.uops import UopCache
from compiler.topi.vta import Env, Tiling, conv2d_ir
from compiler.topi.vta.tiling import Conv2dShape
from vta_hw.config import load_config
from vta_hw.isa import DEP_FLAGS, Alu, AluOp, Finish, Gemm, Load, MemId, Store, Uop

CFG = load_config("1x4_i8w8a32_10_10_10_11_bus32")

INSNS = [Load(mem=MemId.WGT, sram_base=3, dram_base=70, y_size=2, x_size=5, x_stride=9,
              y_pad_0=1, x_pad_1=2, pop_next=True),
         Store(sram_base=4, dram_base=11, y_size=1, x_size=8, x_stride=8),
         Gemm(reset=True, uop_bgn=2, uop_end=6, iter_out=3, iter_in=4, dst_factor_out=5,
              src_factor_in=6, wgt_factor_out=7, push_prev=True),
         Alu(alu_op=AluOp.SHR, use_imm=True, imm=-3, uop_bgn=1, uop_end=2, iter_out=2),
         Finish()]


@pytest.mark.parametrize("insn", INSNS, ids=lambda i: type(i).__name__)
def test_with_flags_equals_dataclasses_replace(insn):
    for n in range(len(DEP_FLAGS) + 1):
        for flags in itertools.combinations(DEP_FLAGS, n):
            got = with_flags(insn, flags)
            want = dataclasses.replace(insn, **dict.fromkeys(flags, True))
            assert type(got) is type(want) and got == want and hash(got) == hash(want)
    assert not INSNS[1].push_prev          # the original is left as it was


def test_uop_cache_places_equal_sequences_in_other_lists_once():
    cache = UopCache(CFG)
    a = [Uop(0, 1, 2), Uop(1, 2, 3)]
    b = [Uop(0, 1, 2), Uop(1, 2, 3)]       # equal to a, another list
    c = [Uop(5, 0, 0)]
    bgn_a, load_a = cache.place(a)
    bgn_b, load_b = cache.place(b)
    bgn_c, load_c = cache.place(c)
    assert load_a is not None and (load_a.x_size, load_a.dram_base) == (2, 0)
    assert (bgn_b, load_b) == (bgn_a, None)             # resident: no second LOAD
    assert load_c is not None and (bgn_c, load_c.dram_base) == (2, 2)
    assert cache.dram == a + c and cache.loads == 2


def test_replayed_kernels_share_one_record_per_uop_placement():
    """A conv's GEMMs repeat per tile: equal instructions are one object, and the program
    holds every replay, each one of fewer records."""
    env = Env(CFG)
    func = conv2d_ir(env, Conv2dShape(1, 2, 6, 6, 2, 3, 3, 1, 1, 1, 1), Tiling(3, 6, 1, 1, 3, 2))
    func = alu_pragma.inject_alu(func, env)      # as codegen.build does first
    g = codegen._Gen(func, CFG, {}, {})
    g.stmt(func.body, {})
    gemms = [e.insn for e in g.entries if isinstance(e.insn, Gemm)]
    distinct = {id(i) for i in gemms}
    assert len(gemms) > len(distinct) >= 1
