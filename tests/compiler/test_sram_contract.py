"""What the compiler emits follows the SRAM contract (``vta_hw.isa``): every program reads
only SRAM it wrote, partial tiles included, so no execution depends on what a previous
program left in SRAM."""
from __future__ import annotations

import pytest

from compiler.topi.vta import conv2d_program, dense_program
from compiler.topi.vta.te_conv2d import conv2d_te_program
from sim import functional
from vta_hw.config import load_config

SMALL = "1x4_i8w8a32_10_10_10_11_bus32"


@pytest.mark.parametrize("data,kernel,stride,pad", [
    ((1, 4, 6, 6), (4, 4, 3, 3), 1, 1),
    ((1, 8, 7, 5), (12, 8, 3, 3), 2, 1),     # partial tiles in every dimension
    ((1, 12, 5, 7), (4, 12, 3, 3), 1, 2),
])
@pytest.mark.parametrize("vthreads", [1, 2])
def test_conv2d_programs_read_only_what_they_wrote(data, kernel, stride, pad, vthreads):
    k = conv2d_program(load_config(SMALL), data, kernel, stride, pad, shift=4, relu=True,
                       vthreads=vthreads)
    assert functional.run(k.program, strict_sram=True).warnings == []


def test_dense_and_te_conv2d_programs_read_only_what_they_wrote():
    cfg = load_config(SMALL)
    functional.run(dense_program(cfg, (1, 20), (12, 20), shift=3).program, strict_sram=True)
    B = load_config().BLOCK_IN
    for requantize in (False, True):
        p = conv2d_te_program(load_config(), (1, 1, 8, 8, 1, B), (1, 1, 3, 3, B, B),
                              padding=(1, 1), bias=requantize, requantize=requantize, shift=4)
        functional.run(p, strict_sram=True)
