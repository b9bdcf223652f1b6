"""The te conv route compiles every offloaded ResNet-18 layer (bench/te_conv2d_resnet18.py):
in CI at input size 32 on the default preset; at size 32 and at size 224 on every preset,
``slow`` (the BLOCK 1 and 4 presets take minutes per full-size layer, in the VTA code
generator). Each row's cycles come from the cycle model for both routes; on a sample of
layers (one per preset, a different one on each) the te program also runs with data and
its output is checked bit-exact against numpy's conv."""
import importlib.util
from pathlib import Path

import pytest

from vta_hw.config import preset_names

ROOT = Path(__file__).resolve().parents[4]
_spec = importlib.util.spec_from_file_location("te_conv2d_resnet18",
                                               ROOT / "bench" / "te_conv2d_resnet18.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)
LAYERS = bench.resnet18_layers


def check(rows, presets):
    assert {r["preset"] for r in rows} == set(presets)
    assert sum(bool(r.get("bit_exact")) for r in rows) == len(presets)   # one sample each
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
    preset = "1x16_i8w8a32_15_15_18_17"
    rows = bench.main(["--size", "32", "--preset", preset, "--values", "sample"])
    check(rows, [preset])
    assert len(rows) == 11 and rows[preset_names().index(preset) % 11]["bit_exact"]
    out = capsys.readouterr().out
    assert "layer1.conv" in out and '"compile_s_by_preset"' in out.splitlines()[-1]


@pytest.mark.slow
def test_every_layer_at_size_32_on_every_preset():
    check(bench.main(["--size", "32", "--preset", "all", "--values", "sample"]), preset_names())


@pytest.mark.slow
@pytest.mark.parametrize("preset", preset_names())
def test_every_layer_at_full_size(preset):
    """Size 224 on every preset: minutes on the BLOCK >= 8 presets, an hour or more on the
    BLOCK 1 and 4 ones (about 100k instructions per layer, in the VTA code generator)."""
    check(bench.main(["--size", "224", "--preset", preset, "--values", "sample"]), [preset])
