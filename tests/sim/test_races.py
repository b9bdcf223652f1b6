"""The race detector flags unordered cross-module accesses, and only those."""
from __future__ import annotations

import dataclasses

import numpy as np
from conftest import Builder

from sim.races import find_races
from sim.random_program import random_program
from vta_hw.config import load_config
from vta_hw.isa import Finish, Gemm, Load, MemId, Store, Uop


def gemm_program(cfg, *, raw_token=True, war_token=True):
    """Load inp[0] -> GEMM -> store; then load inp[0] again (WAR vs the GEMM)."""
    b = Builder(cfg)
    b.buf("a", np.ones((2, 1, 4), np.int8))
    b.buf("o", shape=(1, 1, 4), kind="output")
    ub = b.uops([Uop(0, 0, 0)])
    return b.program([
        Load(mem=MemId.INP, dram_base=b.at("a", "inp"), y_size=1, x_size=1, x_stride=1,
             push_next=raw_token),
        Load(mem=MemId.UOP, dram_base=ub, y_size=1, x_size=1, x_stride=1, pop_prev=raw_token),
        Gemm(uop_bgn=0, uop_end=1, iter_out=1, iter_in=1, push_next=True, push_prev=war_token),
        Store(pop_prev=True, push_prev=True, dram_base=b.at("o", "out"), y_size=1, x_size=1,
              x_stride=1),
        Load(mem=MemId.INP, dram_base=b.at("a", "inp") + 1, y_size=1, x_size=1, x_stride=1,
             pop_next=war_token),
        Finish(pop_next=True)])


def test_ordered_program_has_no_race(small_cfg):
    assert find_races(gemm_program(small_cfg)) == []


def test_missing_raw_token_is_a_race(small_cfg):
    races = find_races(gemm_program(small_cfg, raw_token=False))
    assert [(r.kind, r.resource, r.location, r.first, r.second) for r in races] == [
        ("RAW", "inp", 0, ("load", 0), ("compute", 2))]
    assert str(races[0]) == ("RAW race on inp[0] between load instruction 0 and compute "
                             "instruction 2: no token chain orders them")


def test_missing_war_token_is_a_race(small_cfg):
    races = find_races(gemm_program(small_cfg, war_token=False))
    assert [(r.kind, r.resource, r.first, r.second) for r in races] == [
        ("WAR", "inp", ("compute", 2), ("load", 4))]


def test_dropping_any_needed_pop_from_generated_programs_is_caught():
    cfg = load_config("1x4_i8w8a32_10_10_10_11_bus32")
    caught = 0
    for seed in range(6):
        p, _ = random_program(cfg, seed, kinds={"gemm", "alu", "pad", "readback"})
        for k, insn in enumerate(p.insns[:-1]):
            for flag in ("pop_prev", "pop_next"):
                if getattr(insn, flag):
                    q = dataclasses.replace(p, insns=p.insns[:k] + [
                        dataclasses.replace(insn, **{flag: False})] + p.insns[k + 1:])
                    caught += bool(find_races(q))
    assert caught > 20  # without spare tokens almost every pop guards some access


def test_store_into_the_instruction_stream_is_a_race(small_cfg):
    p = Builder(small_cfg).program([Store(y_size=1, x_size=1, x_stride=1), Finish()])
    p.insns[0] = Store(dram_base=p.insn_base // small_cfg.out_elem_bytes + 1, y_size=1,
                       x_size=1, x_stride=1)
    races = find_races(p)
    assert [(r.kind, r.resource, r.location, r.first, r.second) for r in races] == [
        ("WAR", "dram", p.insn_base + 4, ("fetch", -1), ("store", 0))]
