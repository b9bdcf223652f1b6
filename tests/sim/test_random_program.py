"""Random programs: valid on every preset, race-free, balanced, deterministic, varied."""
from __future__ import annotations

import collections

import numpy as np
import pytest

from sim.functional import run
from sim.races import find_races
from sim.random_program import ALL_KINDS, describe_program, random_program
from sim.tokens import TokenPlanner
from vta_hw import timing
from vta_hw.config import load_config, preset_names
from vta_hw.isa import Alu, AluOp, Finish, Gemm, Load, MemId, Store
from vta_hw.program import Program

SEEDS = range(16)


@pytest.mark.parametrize("preset", preset_names())
def test_random_programs_run_race_free_on_every_schedule(preset):
    cfg = load_config(preset)
    for seed in SEEDS:
        for size in ("tiny", "small", "medium"):
            p, inputs = random_program(cfg, seed, size=size)
            ctx = f"{preset} seed={seed} size={size}\n{describe_program(p)}"
            res = run(p)
            assert res.finished and res.warnings == [], ctx
            assert not any(res.leftover_tokens.values()), ctx
            assert find_races(p) == [], ctx
            # Any token-respecting order, under the hardware queue depths, gives the same image.
            for s in range(2):
                other = run(p, schedule="random", seed=seed * 7 + s,
                            cmd_queue_depth=timing.CMD_QUEUE_DEPTH,
                            token_queue_depth=timing.TOKEN_QUEUE_DEPTH)
                assert np.array_equal(other.dram, res.dram), ctx


def test_small_preset_many_seeds_tiny_queues():
    """Even 1-entry command queues cannot deadlock a generated program (every wait points
    backwards in program order), and no queue gets more pushes than a token queue holds."""
    cfg = load_config("1x4_i8w8a32_10_10_10_11_bus32")
    for seed in range(100, 160):
        p, _ = random_program(cfg, seed)
        ref = run(p).dram
        got = run(p, schedule="random", seed=seed, cmd_queue_depth=1,
                  token_queue_depth=timing.TOKEN_QUEUE_DEPTH).dram
        assert np.array_equal(got, ref), describe_program(p)


def test_deterministic_per_seed():
    cfg = load_config("1x8_i8w8a32_11_12_13_14")
    a, ia = random_program(cfg, 5)
    b, ib = random_program(cfg, 5)
    c, _ = random_program(cfg, 6)
    assert a.insns == b.insns and a.uops == b.uops
    assert np.array_equal(a.dram_image(), b.dram_image())
    assert all(np.array_equal(ia[k], ib[k]) for k in ia)
    assert a.insns != c.insns


def test_inputs_are_also_the_buffers_data():
    cfg = load_config()
    p, inputs = random_program(cfg, 1)
    assert sorted(inputs) == ["acc", "inp", "out", "wgt"]
    assert np.array_equal(p.dram_image(inputs), p.dram_image())
    assert inputs["inp"].dtype == np.int8 and inputs["acc"].dtype == np.int32
    assert inputs["inp"].shape[1:] == (cfg.BATCH, cfg.BLOCK_IN)


def test_structure_and_size():
    cfg = load_config("1x4_i8w8a32_10_10_10_11_bus32")
    limits = {"tiny": 45, "small": 80, "medium": 140}
    for seed in range(30):
        for size, limit in limits.items():
            p, _ = random_program(cfg, seed, size=size)
            assert isinstance(p.insns[-1], Finish)
            assert sum(isinstance(i, Finish) for i in p.insns) == 1
            assert len(p.insns) <= limit


def test_last_store_is_awaited_by_finish():
    """FINISH pops s2c, and the store module's last instruction pushes it."""
    cfg = load_config()
    for seed in range(20):
        p, _ = random_program(cfg, seed)
        assert p.insns[-1].pop_next
        last_store = [i for i in p.insns if isinstance(i, Store)][-1]
        assert last_store.push_prev


def test_features_are_covered():
    """Over a few dozen seeds every feature the RTL must handle shows up."""
    cfg = load_config("1x8_i8w8a32_11_12_13_14")
    seen = collections.Counter()
    for seed in range(40):
        p, _ = random_program(cfg, seed)
        out_base = p.buffer("out").offset // cfg.inp_elem_bytes
        for i in p.insns:
            if isinstance(i, Alu):
                seen[f"alu {i.alu_op.name} {'imm' if i.use_imm else 'src'}"] += 1
                seen["negative imm"] += i.use_imm and i.imm < 0
                seen["alu reset"] += i.reset
            elif isinstance(i, Gemm):
                seen["gemm reset" if i.reset else "gemm"] += 1
                seen["gemm loops"] += i.iter_out > 1 and i.iter_in > 1
            elif isinstance(i, Load):
                seen[f"load {i.mem.name}"] += i.x_size > 0
                seen["noop load"] += i.x_size == 0
                for pad in ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1"):
                    seen[pad] += i.x_size > 0 and getattr(i, pad) > 0
                seen["strided"] += i.y_size > 1 and i.x_stride > i.x_size
                seen["readback"] += (i.mem == MemId.INP and i.x_size > 0
                                     and i.dram_base >= out_base)
            elif isinstance(i, Store):
                seen["store" if i.x_size else "noop store"] += 1
            for f in ("pop_prev", "pop_next", "push_prev", "push_next"):
                seen[f] += getattr(i, f)
    wanted = ([f"alu {op.name} {form}" for op in AluOp for form in ("imm", "src")]
              + ["negative imm", "alu reset", "gemm", "gemm reset", "gemm loops", "load INP",
                 "load WGT", "load UOP", "load ACC", "noop load", "y_pad_0", "y_pad_1",
                 "x_pad_0", "x_pad_1", "strided", "readback", "store", "noop store",
                 "pop_prev", "pop_next", "push_prev", "push_next"])
    missing = [w for w in wanted if not seen[w]]
    assert not missing, f"never generated: {missing}"


def test_outputs_are_not_trivial():
    cfg = load_config()
    changed = 0
    for seed in range(10):
        p, inputs = random_program(cfg, seed)
        out = p.read(run(p).dram, "out")
        changed += int(np.count_nonzero(out != inputs["out"]) > 0)
    assert changed >= 8


def test_kinds_restrict_the_features():
    cfg = load_config()
    for seed in range(10):
        p, _ = random_program(cfg, seed, kinds={"gemm"})
        assert not any(isinstance(i, Alu) for i in p.insns)
        assert not any(isinstance(i, Load) and (i.mem == MemId.ACC or
                       (i.x_size > 0 and (i.y_pad_0 or i.y_pad_1 or i.x_pad_0 or i.x_pad_1)))
                       for i in p.insns)
        assert run(p).finished and find_races(p) == []


def test_save_load_roundtrip_runs_the_same(tmp_path):
    cfg = load_config("2x16_i8w8a32_15_15_18_18")
    p, _ = random_program(cfg, 3)
    p.save(tmp_path / "r.vtaprog")
    q = Program.load(tmp_path / "r.vtaprog")
    assert np.array_equal(run(q).dram, run(p).dram)


def test_bad_arguments():
    cfg = load_config()
    with pytest.raises(ValueError, match="size must be one of tiny, small, medium, not 'huge'"):
        random_program(cfg, 0, size="huge")
    with pytest.raises(ValueError, match=r"unknown kind\(s\) \['fma'\]"):
        random_program(cfg, 0, kinds={"gemm", "fma"})
    assert "gemm" in ALL_KINDS


def test_token_planner_orders_store_before_a_later_load_through_compute():
    tp = TokenPlanner()
    tp.emit("store", Store(x_size=1, y_size=1))
    tp.emit("load", Load(mem=MemId.INP, x_size=1, y_size=1), {"store": 0})
    insns = tp.finish()
    # store pushes s2c; a compute sync pops it and pushes c2l; the load pops that.
    assert insns[0].push_prev
    assert isinstance(insns[1], Load) and insns[1].mem == MemId.UOP and insns[1].pop_next \
        and insns[1].push_prev
    assert insns[2].pop_next
    res = run(Program(load_config(), insns, [], [], insn_base=0, uop_base=0, dram_bytes=4096))
    assert not any(res.leftover_tokens.values())


def test_without_overlap_every_iteration_is_independent():
    """kinds without "overlap": no GEMM/ALU writes a dst twice or reads (ALU src) an entry
    another of its iterations writes. Checked on the uop SRAM as the program leaves it."""
    from sim.machine import Machine
    cfg = load_config("1x8_i8w8a32_11_12_13_14")
    checked = 0
    for seed in range(30):
        p, _ = random_program(cfg, seed, kinds=ALL_KINDS - {"overlap"})
        m, img = Machine(cfg), p.dram_image()
        for k, insn in enumerate(p.insns):  # program order is one valid order (race-free)
            if isinstance(insn, (Gemm, Alu)) and insn.uop_end > insn.uop_bgn:
                dst, src = (a.tolist() for a in m.indices(insn, ("dst", "src")))
                assert len(set(dst)) == len(dst), describe_program(p)
                if isinstance(insn, Alu) and not (insn.use_imm or insn.reset):
                    assert all(s == d or s not in dst for s, d in zip(src, dst))
                checked += 1
            m.execute(insn, k, img)
    assert checked > 50


def test_with_overlap_some_iterations_depend_on_each_other():
    from sim.machine import Machine
    cfg = load_config("1x8_i8w8a32_11_12_13_14")
    repeated = 0
    for seed in range(20):
        p, _ = random_program(cfg, seed)
        m, img = Machine(cfg), p.dram_image()
        for k, insn in enumerate(p.insns):
            if isinstance(insn, (Gemm, Alu)) and insn.uop_end > insn.uop_bgn:
                (dst,) = m.indices(insn, ("dst",))
                repeated += len(set(dst.tolist())) < dst.size
            m.execute(insn, k, img)
    assert repeated > 5


@pytest.mark.slow
@pytest.mark.parametrize("preset", preset_names())
def test_soak_many_seeds(preset):
    """Many more seeds than the quick test (deselected with -m 'not slow')."""
    cfg = load_config(preset)
    for seed in range(1000, 1300):
        p, _ = random_program(cfg, seed, size=("tiny", "small", "medium")[seed % 3])
        res = run(p)
        assert res.finished and not any(res.leftover_tokens.values())
        assert find_races(p) == [], f"{preset} seed={seed}\n{describe_program(p)}"
        other = run(p, schedule="random", seed=seed, cmd_queue_depth=timing.CMD_QUEUE_DEPTH,
                    token_queue_depth=timing.TOKEN_QUEUE_DEPTH)
        assert np.array_equal(other.dram, res.dram)
