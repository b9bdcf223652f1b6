"""README.md's ``python`` block runs as pasted after ``make demo`` (here in a temporary folder
that links ``examples/``), predicts the label of the digit it prints, and writes no file that
``make demo`` wrote."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "README.md"


def test_readme_python_block_runs(tmp_path, monkeypatch, capsys):
    text = DOC.read_text()
    blocks = list(re.finditer(r"^```python\n(.*?)^```", text, re.M | re.S))
    assert blocks, "README.md has no python block"
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    session = {"__name__": "readme"}
    for m in blocks:
        line = text.count("\n", 0, m.start(1))
        exec(compile("\n" * line + m.group(1), str(DOC), "exec"), session)  # tracebacks: README line
    out = capsys.readouterr().out
    said = re.search(r"predicted (\d) label (\d)", out)
    assert said, f"README's snippet prints no 'predicted D label D' line:\n{out}"
    assert said.group(1) == said.group(2), said.group(0)
    assert int(re.search(r"cycles (\d+)", out).group(1)) > 0


def test_readme_python_block_keeps_make_demo_outputs():
    demo = set(re.findall(r"-o \$\(OUT\)/(\S+)", (ROOT / "Makefile").read_text()))
    assert "digits_vta.vtamod" in demo, "the Makefile's outputs moved: update this test"
    saved = set(re.findall(r"""\.save\(["']out/([^"']+)["']""", DOC.read_text()))
    assert saved and not saved & demo, f"README's snippet overwrites make demo's {saved & demo}"
