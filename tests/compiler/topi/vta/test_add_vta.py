"""The residual add on the accelerator: bit-exact with the quantized graph's ADD on the
functional simulator (random module interleaving, no races) and the cycle simulator."""
import numpy as np
import pytest

from compiler.quant.qgraph import QNode, QOp, eval_node
from compiler.topi.vta import add_program
from compiler.topi.vta.add import clip_ops
from compiler.topi.vta.layout import add_reference
from sim import cycle, functional
from sim.races import find_races
from vta_hw.config import load_config, preset_names

from vta_helpers import rand_i8


def run_add(k, a, b, seed=0):
    img = k.program.dram_image(k.inputs(a, b))
    res = functional.run(k.program, img, schedule="random", seed=seed,
                         cmd_queue_depth=16, token_queue_depth=32)
    assert res.finished and not res.warnings, res.warnings
    return k.unpack(k.program.read(res.dram, "out")), find_races(k.program, img)


def oracle(a, b, la, lb, shift, relu):
    """The quantized graph's own ADD (``qgraph.eval_node``)."""
    n = QNode(QOp.ADD, (0, 1), a.shape, "int8", 0,
              {"la": la, "lb": lb, "shift": shift, "relu": relu})
    return eval_node(n, [a, b], {})


# (shape, la, lb, shift, relu): channels off the block (24, 255, 40), a batch of 3,
# shifts the quantizer makes (0..3), a gap > 6 (a left SHR between the GEMMs), both
# operands shifted, shifts whose rounding constant no 16-bit immediate holds, and sums
# that wrap around int32 (25, 31)
CASES = [((1, 24, 5, 5), 0, 0, 0, False),
         ((1, 255, 3, 3), 1, 0, 1, True),
         ((3, 40, 4, 3), 0, 3, 2, False),
         ((1, 64, 8, 8), 0, 0, 1, True),
         ((1, 32, 4, 4), 20, 0, 20, True),
         ((2, 16, 3, 5), 2, 5, 4, False),
         ((1, 48, 2, 2), 25, 31, 26, False)]


@pytest.mark.parametrize("shape, la, lb, shift, relu", CASES)
def test_add_matches_oracle_on_fsim(shape, la, lb, shift, relu, rng):
    k = add_program(load_config(), shape, la=la, lb=lb, shift=shift, relu=relu)
    a, b = rand_i8(rng, shape), rand_i8(rng, shape)
    got, races = run_add(k, a, b, seed=1)
    want = oracle(a, b, la, lb, shift, relu)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, k.reference(a, b))
    assert races == []
    assert len(np.unique(want)) > 2  # not a saturated, trivially matching output


@pytest.mark.parametrize("preset", preset_names())
def test_add_every_preset_small_tiles(preset, rng):
    """A fixed small tile: many tiles and a remainder over two threads, on every preset."""
    shape = (3, 21, 3, 4)
    k = add_program(load_config(preset), shape, la=1, lb=0, shift=1, relu=True, tile=5)
    a, b = rand_i8(rng, shape), rand_i8(rng, shape)
    got, races = run_add(k, a, b, seed=2)
    np.testing.assert_array_equal(got, oracle(a, b, 1, 0, 1, True))
    assert races == [] and k.stats.insns["STORE_OUT"] > 4


@pytest.mark.parametrize("shape, la, lb, shift, relu", [CASES[1], CASES[4], CASES[6]])
def test_add_on_cycle_simulator(shape, la, lb, shift, relu, rng):
    k = add_program(load_config(), shape, la=la, lb=lb, shift=shift, relu=relu)
    a, b = rand_i8(rng, shape), rand_i8(rng, shape)
    r = cycle.run(k.program, k.program.dram_image(k.inputs(a, b)))
    np.testing.assert_array_equal(k.unpack(k.program.read(r.dram, "out")),
                                  oracle(a, b, la, lb, shift, relu))
    assert r.cycles > 0


def test_add_block1_bus8_on_cycle_simulator(rng):
    """BLOCK=1 on an 8-bit bus (the 1x1 preset): numpy's output on the cycle model too."""
    shape = (1, 5, 3, 4)
    k = add_program(load_config("1x1_i8w8a32_10_9_9_11_bus8_cq0"), shape, la=1, lb=0, shift=1,
                    relu=True)
    a, b = rand_i8(rng, shape), rand_i8(rng, shape)
    r = cycle.run(k.program, k.program.dram_image(k.inputs(a, b)))
    want = oracle(a, b, 1, 0, 1, True)
    np.testing.assert_array_equal(k.unpack(k.program.read(r.dram, "out")), want)
    assert len(np.unique(want)) > 2


def test_two_virtual_threads_hide_dma():
    """A ResNet-18 stage-2 add (128 x 28 x 28): two threads overlap each tile's DMA with
    the other's GEMM/ALU work: under 8 cycles per 16-channel element (7 GEMM/ALU
    passes and 6 DMA beats per element, overlapped)."""
    cfg, shape = load_config(), (1, 128, 28, 28)
    elems = 128 // 16 * 28 * 28
    cycles = {}
    for vt in (1, 2):
        k = add_program(cfg, shape, la=1, lb=0, shift=1, relu=True, vthreads=vt)
        cycles[vt] = cycle.run(k.program, values=False).cycles
    assert cycles[2] < 0.85 * cycles[1], cycles
    assert cycles[2] < 8 * elems, cycles


def test_clip_ops_drop_bounds_no_input_reaches():
    assert clip_ops(0, 0, 1, False) == []                      # (a + b + 1) >> 1 is int8
    assert clip_ops(0, 0, 1, True) == [("MAX", 0)]
    assert clip_ops(1, 0, 1, False) == [("MAX", -128), ("MIN", 127)]
    assert clip_ops(0, 0, 0, False) == [("MAX", -128), ("MIN", 127)]
    assert clip_ops(31, 31, 0, False) == [("MAX", -128), ("MIN", 127)]  # wraps: keep both


def test_reference_wraps_like_int32():
    a = np.array([127, -128, 1], np.int8)
    b = np.array([127, -128, -1], np.int8)
    # 254 << 24 wraps to -2 << 24 and -256 << 24 to 0: (s + 2**23) >> 24 is -2, 0, 0
    assert add_reference(a, b, 24, 24, 24, False).tolist() == [-2, 0, 0]


def test_add_errors_name_the_value():
    cfg = load_config()
    with pytest.raises(ValueError, match=r"add shift must be an int in \[0, 31\].*not 32"):
        add_program(cfg, (1, 16, 2, 2), shift=32)
    with pytest.raises(ValueError, match=r"add la must be .* not -1"):
        add_program(cfg, (1, 16, 2, 2), la=-1)
    with pytest.raises(ValueError, match=r"4 positive ints .*not \(16, 2\)"):
        add_program(cfg, (16, 2))
    with pytest.raises(ValueError, match=r"add tile must be in \[1, \d+\] .* not 100000"):
        add_program(cfg, (1, 16, 2, 2), tile=100000)
