"""Every config field is listed, with its range and meaning, by ``vta info`` and docs/config.md."""
import dataclasses
from pathlib import Path

from tests.cli_util import run_cli as run
from vta_hw.config import VTAConfig
from vta_hw.config_fields import fields, markdown

ROOT = Path(__file__).resolve().parents[2]


def test_every_field_has_a_range_and_a_meaning():
    assert [f.name for f in fields()] == [f.name for f in dataclasses.fields(VTAConfig)]
    assert all(f.allowed and f.meaning for f in fields())


def test_docs_config_md_holds_the_table():
    assert markdown() in (ROOT / "docs" / "config.md").read_text()


def test_vta_info_with_a_config_file_lists_every_field(tmp_path):
    path = tmp_path / "mine.json"
    path.write_text('{"LOG_BATCH": 1, "BUS_WIDTH": 128}')
    res = run("info", "--config", str(path))
    assert res.exit_code == 0, res.output
    for f in fields():
        line = next(ln for ln in res.output.splitlines() if ln.split()[:1] == [f.name])
        assert f.allowed in line and f.meaning in line
    assert "LOG_BATCH             1" in res.output and "BUS_WIDTH           128" in res.output
