"""Every tutorial of tutorials/ runs as a user runs it (``python tutorials/NAME.py``, here in a
temporary folder) and must exit 0: each checks its results and its figures itself, and says
so to the reader ("matches numpy (max abs error 0)"). A
tutorial in SLOW (an RTL build) runs whole under the ``slow`` marker and, in CI, with the
arguments that make its small version."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = sorted(p.name for p in (ROOT / "tutorials").glob("*.py"))
#: tutorial -> (the arguments of its small version, why the whole one is slow)
SLOW = {
    "rtl_kernel.py": (["--no-rtl"], "builds the RTL with Verilator (20 s to 3 min)"),
}
CASES = []
for _name in TUTORIALS:
    if _name in SLOW:
        CASES.append(pytest.param(_name, SLOW[_name][0], id=f"{_name}-small"))
        CASES.append(pytest.param(_name, [], id=_name, marks=pytest.mark.slow))
    else:
        CASES.append(pytest.param(_name, [], id=_name))


@pytest.mark.parametrize("name,args", CASES)
def test_tutorial_runs(name, args, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, str(ROOT / "tutorials" / name), *args], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, f"tutorials/{name} failed:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    assert "cycles" in r.stdout, f"tutorials/{name} prints no cycles"
    assert re.search(r"match(es)? .*\(max (abs|rel) error \S+\)", r.stdout), \
        f"tutorials/{name} prints no 'matches ... (max abs error E)' line for the reader"
