"""torch.compile(model, backend="vta") (driver/torch_compile.py): found through the
``torch_dynamo_backends`` entry point without an import, unsupported ops left to eager,
one compile per input shapes (the shape cache), weights frozen, the target from options."""
from __future__ import annotations

import importlib.metadata
import sys
import tomllib
from pathlib import Path

import pytest
import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[2]


def test_the_backend_is_declared_and_installed_as_an_entry_point():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["entry-points"]["torch_dynamo_backends"] == {
        "vta": "driver.torch_compile:vta_backend"}
    assert project["project"]["optional-dependencies"]["torch"] == ["torch==2.13.0"]
    eps = importlib.metadata.entry_points(group="torch_dynamo_backends")
    assert eps["vta"].value == "driver.torch_compile:vta_backend"   # `make setup` installed it
    assert "vta" in torch._dynamo.list_backends(exclude_tags=())


class Mixed(nn.Module):
    """Linear + ReLU (compiled), exp and cumsum (no converters: eager), then more compiled ops."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.a, self.b = nn.Linear(6, 6), nn.Linear(6, 3)

    def forward(self, x):
        y = torch.exp(torch.relu(self.a(x)) * 0.1)
        return self.b(torch.cumsum(y, 1) - 1)


@pytest.fixture
def stats():
    from driver.torch_compile import STATS
    torch._dynamo.reset()
    before = {k: (dict(v) if isinstance(v, dict) else v) for k, v in STATS.items()}
    yield lambda: {k: (v - before[k] if not isinstance(v, dict) else
                       {o: c - before[k].get(o, 0) for o, c in v.items() if c - before[k].get(o, 0)})
                   for k, v in STATS.items()}


def test_unsupported_ops_fall_back_to_eager_and_shapes_are_cached(stats):
    model = Mixed().eval()
    compiled = torch.compile(model, backend="vta", dynamic=True)
    with torch.no_grad():
        for batch in (2, 5, 2, 5):
            x = torch.randn(batch, 6)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
    s = stats()
    assert s["graphs"] == 1 and s["compiles"] == 2 and s["cache_hits"] == 2
    assert s["eager_ops"] == {"aten.exp.default": 2, "aten.cumsum.default": 2}
    assert s["partitions"] == 4           # before and after the eager ops, per shape


def test_weights_are_constants_and_options_pick_the_target(stats):
    from driver import torch_compile
    seen = []
    original = torch_compile._Runner.__init__

    def spy(self, module, frozen, single):
        seen.append((module.input_info(), module.targets))
        original(self, module, frozen, single)

    torch_compile._Runner.__init__ = spy
    try:
        model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU()).eval()
        x = torch.randn(1, 3, 8, 8)
        compiled = torch.compile(model, backend="vta", options={"target": "llvm -mcpu=x86-64-v2"})
        with torch.no_grad():
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    finally:
        torch_compile._Runner.__init__ = original
    (inputs, targets), = seen
    assert inputs == [("in0", (1, 3, 8, 8), "float32")]       # weights and statistics baked in
    assert targets[0].endswith("-mcpu=x86-64-v2")


def test_no_import_of_the_backend_is_needed(tmp_path):
    """A fresh interpreter: torch.compile(backend='vta') with only torch imported."""
    import subprocess
    code = ("import torch\n"
            "m = torch.nn.Linear(3, 2).eval()\n"
            "x = torch.randn(4, 3)\n"
            "with torch.no_grad():\n"
            "    torch.testing.assert_close(torch.compile(m, backend='vta')(x), m(x))\n"
            "import sys; print('driver.torch_compile' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "True"
