"""RTL fixtures: each Verilator model is built once per session (and cached on disk)."""
import pytest

from driver.rtl import build_model
from vta_hw.config import load_config
from vta_hw.rtl import RtlParams
from vta_hw.timing import DramTiming

SMALL = "1x4_i8w8a32_10_10_10_11_bus32"
MID = "1x8_i8w8a32_11_12_13_14"
DEFAULT = "1x16_i8w8a32_15_15_18_17"


@pytest.fixture(scope="session")
def rtl_config():
    """``rtl_config(preset, timing=None) -> VTAConfig`` with its model built."""
    built = {}

    def get(preset: str, timing: DramTiming | None = None):
        timing = timing or DramTiming()
        cfg = load_config(preset)
        key = (preset, timing.max_burst_beats, timing.page_bytes)
        if key not in built:
            built[key] = build_model(cfg, RtlParams.from_timing(timing))
        return cfg

    return get
