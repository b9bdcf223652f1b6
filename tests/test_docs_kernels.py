"""docs/kernels.md: its ``python`` blocks run in order as one session, in a temporary folder."""
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "kernels.md"


def test_kernel_page_blocks_run(tmp_path, monkeypatch):
    text = DOC.read_text()
    blocks = list(re.finditer(r"^```python\n(.*?)^```", text, re.M | re.S))
    assert len(blocks) >= 4
    monkeypatch.chdir(tmp_path)
    session = {"__name__": "kernels_doc"}
    for m in blocks:
        line = text.count("\n", 0, m.start(1))
        exec(compile("\n" * line + m.group(1), str(DOC), "exec"), session)
    assert os.path.exists("out_matmul.trace.json")
