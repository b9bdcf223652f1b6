"""The shipped accelerator logs (``compiler/autotune/logs/vta_<preset>.jsonl``, written by
``bench/vta_tune.py --ship``): one per preset, records of that preset only, applied by
``build_model(..., target="vta")`` without being asked for; they cover a small model's
every accelerator conv and dense layer with tilings that take no more cycles on today's
cycle model than the default point's, and on the default preset compute bit-exact
results."""
from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import onnx

from compiler import build_model
from compiler.autotune import extract_tasks, load_tuning
from compiler.autotune.apply import SHIPPED_DIR
from compiler.autotune.record import read_records
from driver.tune.measure import check_vta_conv2d, measure_vta_conv2d
from tests.models.builders import build_resnet18
from vta_hw.config import DEFAULT_PRESET, load_config

SIZE = 32      # shipped beside 224 for this test (bench/vta_tune.py --ship-sizes)
DIGITS = Path(__file__).resolve().parents[3] / "examples" / "digits" / "digits_cnn.onnx"
#: presets whose small ResNet-18 runs in seconds on the cycle model; the others (8, 4 or 1
#: lanes: 10-33 M cycles at 32 px) are checked on the digits CNN, which every log covers
RESNET_PRESETS = ("1x16_i8w8a32_15_15_18_17", "2x16_i8w8a32_15_15_18_18",
                  "1x32_i8w8a32_15_16_19_18_bus128")


def _vta_logs():
    return sorted(SHIPPED_DIR.glob("vta_*.jsonl"))


def test_the_default_preset_has_a_shipped_log():
    assert SHIPPED_DIR / f"vta_{DEFAULT_PRESET}.jsonl" in _vta_logs()


@pytest.mark.parametrize("path", _vta_logs(), ids=lambda p: p.stem)
def test_a_shipped_log_holds_distilled_records_of_its_own_preset(path):
    preset = path.stem.removeprefix("vta_")
    load_config(preset)                                   # a preset that exists
    with warnings.catch_warnings():
        warnings.simplefilter("error")                    # no damaged or foreign line
        records = read_records(path)
    assert records
    assert all(r.target == {"target": "vta", "config": preset} for r in records)
    assert all(r.key.startswith(f"vta_conv2d({preset};") for r in records)
    assert len({r.key for r in records}) == len(records)  # one record per workload


@pytest.fixture(scope="module")
def resnet():
    return build_resnet18(SIZE)


# without calib on purpose: this checks that the shipped log applies, not accuracy
@pytest.mark.filterwarnings("ignore::compiler.quant.calibration.RandomCalibrationWarning")
def test_a_build_applies_the_shipped_log_without_being_asked(resnet):
    cm = build_model(resnet, target="vta")
    rep = cm.stats["tuning"]
    assert rep["workloads"] > 0 and rep["covered"] == rep["workloads"]
    # the report names the log that supplied the tilings, not the other presets' logs
    assert rep["logs"] == [str(SHIPPED_DIR / f"vta_{DEFAULT_PRESET}.jsonl")]


@pytest.mark.parametrize("path", _vta_logs(), ids=lambda p: p.stem)
def test_the_shipped_tilings_are_no_slower_and_bit_exact(resnet, path):
    """Every preset's shipped tilings of the small ResNet-18 (``RESNET_PRESETS``) or of the
    digits CNN (the others), measured on today's cycle model: none takes more
    cycles than the default point (a log tuned before a change to the hardware or the code
    generator goes stale), and on the default preset each one is bit-exact
    (``bench/vta_tune.py --ship`` checks the others when it writes them)."""
    preset = path.stem.removeprefix("vta_")
    cfg = load_config(preset)
    tiling_for = load_tuning().vta_tiling_for(cfg)
    tasks = (extract_tasks(resnet, "vta", vta_config=preset) if preset in RESNET_PRESETS else
             extract_tasks(onnx.load(DIGITS), "vta", vta_config=preset,
                           input_shapes={"image": (1, 1, 8, 8)}))
    default_total = tuned_total = 0.0
    for t in tasks:
        p = t.payload
        tuned = tiling_for(p["data_shape"], p["kernel_shape"], p["strides"], p["padding"],
                           p["shift"])
        assert tuned is not None, f"no shipped tiling for {t.key}"
        config = {"tiling": tuple(getattr(tuned, f) for f in
                                  ("th", "tw", "toc", "tic", "tkh", "vt", "wres"))}
        default, = measure_vta_conv2d(p, dict(t.space.default.values), {})
        cycles, = measure_vta_conv2d(p, config, {})
        assert cycles <= default, f"{preset} {t.name}: {cycles:.0f} > {default:.0f} cycles"
        if preset == DEFAULT_PRESET:
            assert check_vta_conv2d(p, config) is None, t.name
        default_total += t.weight * default
        tuned_total += t.weight * cycles
    if preset in RESNET_PRESETS:            # the search found something on this model
        assert tuned_total < default_total
