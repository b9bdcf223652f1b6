"""docs/python-api.md: every ``python`` block runs, in the page's order, as one session.

The blocks share one namespace and run in a temporary folder that links the
repository's ``examples/``. A block preceded by ``<!-- needs: NAME ... -->``
is skipped, with the reason, where that hardware is missing (``NEEDS``).
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.gpu_marks import needs_cuda_compiler, needs_gpu, needs_opencl

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "python-api.md"
NEEDS = {"cuda-compiler": needs_cuda_compiler, "cuda-gpu": needs_gpu, "opencl": needs_opencl}
_BLOCK = re.compile(r"^(?:<!-- needs: (?P<needs>[^>]*?) -->\n)?```python\n(?P<src>.*?)^```",
                    re.M | re.S)


def _blocks() -> list:
    """One ``pytest.param(line, source)`` per python block, with its ``needs`` marks."""
    text = DOC.read_text()
    params = []
    for m in _BLOCK.finditer(text):
        line = text.count("\n", 0, m.start("src")) + 1
        needs = (m.group("needs") or "").split()
        unknown = [n for n in needs if n not in NEEDS]
        if unknown:
            raise ValueError(f"{DOC}:{line - 1}: unknown need {unknown[0]!r}; "
                             f"use one of {', '.join(NEEDS)}")
        params.append(pytest.param(line, m.group("src"), id=f"line{line}",
                                   marks=[NEEDS[n] for n in needs]))
    return params


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    """The namespace the blocks share, with the working folder and backend registry
    restored afterwards (the page registers a backend)."""
    from driver.backends import registry
    saved, cwd = dict(registry._BACKENDS), os.getcwd()
    work = tmp_path_factory.mktemp("python_api")
    (work / "examples").symlink_to(ROOT / "examples")
    os.chdir(work)
    try:
        yield {"__name__": "python_api_doc"}
    finally:
        os.chdir(cwd)
        registry._BACKENDS.clear()
        registry._BACKENDS.update(saved)


@pytest.mark.parametrize("line, source", _blocks())
def test_block_runs(session, line, source):
    code = compile("\n" * (line - 1) + source, str(DOC), "exec")  # tracebacks name the doc line
    exec(code, session)
