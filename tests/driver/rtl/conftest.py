"""RTL fixtures: each Verilator model is built once per session (and cached on disk)."""
import pytest

from driver.rtl import build_model
from vta_hw.config import load_config
from vta_hw.rtl import RtlParams
from vta_hw.timing import DramTiming



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
