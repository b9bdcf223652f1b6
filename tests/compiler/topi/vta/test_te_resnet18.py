"""The te conv route compiles every offloaded ResNet-18 layer (bench/te_conv2d_resnet18.py):
in CI at input size 32 on the default preset; at size 32 on every preset and at size 224
on the presets with BLOCK >= 8, ``slow`` (the BLOCK 1 and 4 presets take minutes per
full-size layer). Each row's cycles come from the cycle model for both routes."""
import importlib.util
from pathlib import Path

import pytest

from vta_hw.config import load_config, preset_names

ROOT = Path(__file__).resolve().parents[4]
_spec = importlib.util.spec_from_file_location("te_conv2d_resnet18",
                                               ROOT / "bench" / "te_conv2d_resnet18.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)
LAYERS = bench.resnet18_layers


def check(rows):
    for r in rows:
        assert r["te_cycles"] > 0 and r["library_cycles"] > 0, r
        # the te route's schedule is simpler (no remainder tiles, no resident weights);
        # it stays within 2x of the library's on every layer
        assert r["te_over_library"] < 2.0, r


def test_layers_of_resnet18():
    names = [n for n, _ in LAYERS(224)]
    assert len(names) == 11 and names[0] == "layer1.conv" and names[-1] == "fc"
    assert LAYERS(224)[0][1] == (64, 56, 64, 3, 1, 1)          # the 56x56x64 3x3 layer


def test_every_layer_at_size_32_on_the_default_preset(capsys):
    check(bench.main(["--size", "32", "--preset", "1x16_i8w8a32_15_15_18_17"]))
    assert "layer1.conv" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.parametrize("preset", preset_names())
def test_every_layer_at_size_32_on_every_preset(preset):
    check(bench.main(["--size", "32", "--preset", preset]))


@pytest.mark.slow
@pytest.mark.parametrize("preset", [p for p in preset_names() if load_config(p).BLOCK >= 8])
def test_every_layer_at_full_size(preset):
    check(bench.main(["--size", "224", "--preset", preset]))
