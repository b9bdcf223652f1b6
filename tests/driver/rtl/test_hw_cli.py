"""``vta hw export``: Verilog of a preset; bad input gives a one-line error."""
from click.testing import CliRunner
from rtl_check import SMALL

from driver.cli.main import cli


def test_export_writes_verilog(tmp_path):
    out = tmp_path / "vta.v"
    res = CliRunner().invoke(cli, ["hw", "export", "--config", SMALL, "-o", str(out)])
    assert res.exit_code == 0, res.output
    text = out.read_text()
    assert "module vta(" in text and "mem__cmd_valid" in text and "csr__rdata" in text
    assert f"for {SMALL}" in res.output


def test_export_unknown_preset(tmp_path):
    res = CliRunner().invoke(cli, ["hw", "export", "--config", "nope", "-o",
                                   str(tmp_path / "x.v")])
    assert res.exit_code == 2      # a bad option value is a usage error, as for every --config
    assert "--config nope: no preset or config file named 'nope'" in res.output


def test_export_bad_page_size(tmp_path):
    res = CliRunner().invoke(cli, ["hw", "export", "--config", SMALL, "--page-bytes", "100",
                                   "-o", str(tmp_path / "x.v")])
    assert res.exit_code == 1 and "page_bytes must be a power of two, not 100" in res.output
