"""The documentation site (docs/conf.py: Sphinx, MyST, autodoc, the tutorials' gallery) builds
with warnings as errors, so a broken reference, a missing page or a docstring that does not
parse fails CI. It builds a copy of docs/ and tutorials/ (the gallery writes into its
source folder) in a temporary folder; ``make docs`` builds in place into docs/_build."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def build(tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         str(tmp_path / "docs"), str(tmp_path / "html")],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "VTA_STACK_ROOT": str(ROOT)})


@pytest.fixture
def copy(tmp_path):
    for d in ("docs", "tutorials"):
        shutil.copytree(ROOT / d, tmp_path / d,
                        ignore=shutil.ignore_patterns("_build", "_tutorials", "__pycache__"))
    return tmp_path


def test_docs_site_builds_without_warnings(copy):
    r = build(copy)
    assert r.returncode == 0, r.stdout + r.stderr
    html = copy / "html"
    for page in ("index", "python-api", "config", "api", "_tutorials/index",
                 "_tutorials/matrix_multiply_blocking"):
        assert (html / f"{page}.html").is_file(), page
    assert "run_kernel" in (html / "api.html").read_text()


def test_a_broken_reference_fails_the_build(copy):
    with open(copy / "docs" / "config.md", "a") as f:
        f.write("\nSee [the missing page](no-such-page.md).\n")
    r = build(copy)
    assert r.returncode != 0 and "no-such-page" in r.stdout + r.stderr
