"""Every tutorial of tutorials/ runs as a user runs it (``python tutorials/NAME.py``, here in a
temporary folder) and must exit 0: each checks its results and its figures itself. Those in
SLOW (RTL builds, full sizes) carry the ``slow`` marker; CI runs the rest (about a minute
together on 2 cores)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = sorted(p.name for p in (ROOT / "tutorials").glob("*.py"))
#: tutorial -> why it is slow (it then also has a small version in CI where it says so)
SLOW = {
    "rtl_kernel.py": "builds the RTL with Verilator (20 s to 2 min)",
}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n
                                  for n in TUTORIALS])
def test_tutorial_runs(name, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, str(ROOT / "tutorials" / name)], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, f"tutorials/{name} failed:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    assert "cycles" in r.stdout, f"tutorials/{name} prints no cycles"
