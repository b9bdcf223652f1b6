"""The READMEs' ``python`` blocks run as pasted from the repository root (README.md's after
``make demo``; here in a temporary folder that links ``examples/``), each predicting the label
of the digit it prints; README.md's writes no file that ``make demo`` wrote."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "README.md"


@pytest.mark.parametrize("doc", ["README.md", "examples/digits/README.md"])
def test_readme_python_block_runs(doc, tmp_path, monkeypatch, capsys):
    path = ROOT / doc
    text = path.read_text()
    blocks = list(re.finditer(r"^```python\n(.*?)^```", text, re.M | re.S))
    assert blocks, f"{doc} has no python block"
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    session = {"__name__": "readme"}
    for m in blocks:
        line = text.count("\n", 0, m.start(1))
        exec(compile("\n" * line + m.group(1), str(path), "exec"), session)  # tracebacks: doc line
    out = capsys.readouterr().out
    said = re.search(r"predicted (\d) label (\d)", out)
    assert said, f"{doc}'s snippet prints no 'predicted D label D' line:\n{out}"
    assert said.group(1) == said.group(2), said.group(0)
    if doc == "README.md":
        assert int(re.search(r"cycles (\d+)", out).group(1)) > 0


def test_readme_python_block_keeps_make_demo_outputs():
    demo = set(re.findall(r"-o \$\(OUT\)/(\S+)", (ROOT / "Makefile").read_text()))
    assert "digits_vta.vtamod" in demo, "the Makefile's outputs moved: update this test"
    saved = set(re.findall(r"""\.save\(["']out/([^"']+)["']""", DOC.read_text()))
    assert saved and not saved & demo, f"README's snippet overwrites make demo's {saved & demo}"
