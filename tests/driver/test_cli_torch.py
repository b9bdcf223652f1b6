"""``vta compile model.pt2``: a saved torch.export program through the CLI, dynamic
dimensions fixed by --input-shape or named in a one-line error."""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

from driver.runtime import load_module
from tests.cli_util import run_cli


def _save(path, dynamic: bool):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Flatten(),
                          nn.Linear(4 * 6 * 6, 5)).eval()
    shapes = {"input": {0: torch.export.Dim("batch", min=2, max=16)}} if dynamic else None
    torch.export.save(torch.export.export(model, (torch.randn(2, 3, 6, 6),),
                                          dynamic_shapes=shapes), path)
    return model


def test_compile_pt2_and_run(tmp_path):
    model = _save(tmp_path / "m.pt2", dynamic=False)
    r = run_cli("compile", tmp_path / "m.pt2", "-o", tmp_path / "m.vtamod", "--quiet")
    assert r.exit_code == 0, r.output
    assert "input  input: float32[2, 3, 6, 6]" in r.output
    x = torch.randn(2, 3, 6, 6)
    y, = load_module(str(tmp_path / "m.vtamod"))(x)
    np.testing.assert_allclose(y, model(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_dynamic_pt2_needs_input_shape(tmp_path):
    _save(tmp_path / "d.pt2", dynamic=True)
    r = run_cli("compile", tmp_path / "d.pt2", "-o", tmp_path / "d.vtamod")
    assert r.exit_code == 1
    assert r.output.startswith("Error: the program has dynamic shapes: input 'input' dimension 0 (")
    assert "--input-shape input:1x3x6x6" in r.output and len(r.output.splitlines()) == 1
    r = run_cli("compile", tmp_path / "d.pt2", "--input-shape", "input:8x3x6x6", "-o",
                tmp_path / "d.vtamod", "--quiet")
    assert r.exit_code == 0, r.output
    assert "input  input: float32[8, 3, 6, 6]" in r.output
