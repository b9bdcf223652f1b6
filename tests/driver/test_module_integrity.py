"""A module's parts are tied together: every part (params.npz, each program, the graph,
the kernels) is hashed in manifest.json and the manifest carries its own digest, so a
part replaced by hand, even with its hash updated, is refused with a message naming it."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from driver.cli.main import cli
from driver.runtime import RuntimeModuleError, load_module
from driver.runtime.source import sha256

DIGITS = Path(__file__).resolve().parents[2] / "examples" / "digits"


@pytest.fixture(scope="module")
def vta_module(tmp_path_factory):
    out = tmp_path_factory.mktemp("integrity") / "d.vtamod"
    res = CliRunner().invoke(cli, ["compile", str(DIGITS / "digits_cnn.onnx"), "--target", "vta",
                                   "-o", str(out), "--calibrate", str(DIGITS / "calib.npz"),
                                   "--calibrate-scale", "0.0625", "--quiet"])
    assert res.exit_code == 0, res.output
    return out


@pytest.fixture
def copy(vta_module, tmp_path):
    dst = tmp_path / "m.vtamod"
    shutil.copytree(vta_module, dst)
    return dst


def _other_params(folder: Path) -> bytes:
    """params.npz with the same names and shapes, other values."""
    with np.load(folder / "params.npz") as z:
        arrays = {k: (z[k] + 1).astype(z[k].dtype) for k in z.files}
    (folder / "params.npz").unlink()
    np.savez(folder / "params.npz", **arrays)
    return (folder / "params.npz").read_bytes()


def test_every_part_is_in_the_manifest(vta_module):
    man = json.loads((vta_module / "manifest.json").read_text())
    parts = {str(p.relative_to(vta_module)) for p in vta_module.rglob("*") if p.is_file()}
    assert set(man["files"]) == parts - {"manifest.json"}
    assert "params.npz" in man["files"] and any(f.startswith("programs/") for f in man["files"])


def test_other_params_are_refused_naming_the_file(copy):
    _other_params(copy)
    with pytest.raises(RuntimeModuleError, match=r"params.npz: its contents changed; its sha256 "
                                                 r"differs from manifest.json"):
        load_module(copy, device="fsim")


def test_other_params_with_their_hash_updated_are_refused(copy):
    data = _other_params(copy)
    man = json.loads((copy / "manifest.json").read_text())
    man["files"]["params.npz"] = sha256(data)   # the manifest edited to match
    (copy / "manifest.json").write_text(json.dumps(man))
    with pytest.raises(RuntimeModuleError) as e:
        load_module(copy, device="fsim")
    assert "manifest.json: its digest" in str(e.value) and "edited by hand" in str(e.value)


def test_an_edited_program_is_named(copy):
    prog = sorted((copy / "programs").iterdir())[0]
    data = bytearray(prog.read_bytes())
    data[-1] ^= 1
    prog.write_bytes(bytes(data))
    with pytest.raises(RuntimeModuleError, match=f"programs/{prog.name}: its contents changed"):
        load_module(copy, device="fsim")


def test_an_untouched_module_runs(copy):
    m = load_module(copy, device="fsim")
    assert m(np.zeros((1, 1, 8, 8), np.float32))[0].shape == (1, 10)
