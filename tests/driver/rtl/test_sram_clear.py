"""The driver's SRAM clear (``driver.rtl.clear``) writes every entry of every SRAM on
each preset, without warnings, so a program run after it starts from zeros."""
from __future__ import annotations

import warnings

import pytest

from driver.rtl.clear import clear_program
from sim import functional
from vta_hw.config import load_config, preset_names


@pytest.mark.parametrize("preset", preset_names())
def test_clear_writes_every_entry(preset):
    cfg = load_config(preset)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = functional.run(clear_program(cfg))
    flags = r.machine.written.flags
    assert set(flags) == {"uop", "inp", "wgt", "acc", "out"}
    for mem, f in flags.items():
        assert f.all(), f"{preset}: {mem} entries {(~f).nonzero()[0][:5]} not cleared"
