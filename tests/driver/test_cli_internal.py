"""The CLI tells bad input from bugs: the project's own errors (``VtaError``) and files that
cannot be opened are one ``Error:`` line with exit 1; any other exception is reported as an
internal error (type, where, how to report it) with exit 70, and ``--debug`` shows its
traceback."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from driver.cli.errors import INTERNAL_EXIT
from driver.cli.main import cli
from vta_hw.program import Program, ProgramFormatError


def _invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture
def broken_load(monkeypatch):
    """Program.load with a bug in it: a KeyError no input can explain."""
    def load(path):
        return {}["slot %6"]
    monkeypatch.setattr(Program, "load", staticmethod(load))


def test_a_bug_is_reported_as_an_internal_error(gemm_files, broken_load):
    res = _invoke("disasm", gemm_files[0])
    assert res.exit_code == INTERNAL_EXIT, res.output
    first = res.output.splitlines()[0]
    assert first.startswith("Error: internal error: KeyError in tests/driver/test_cli_internal.py")
    assert "'slot %6'" in first
    assert "This is a bug in vta" in res.output and "vta --debug" in res.output
    assert "Traceback" not in res.output


def test_debug_shows_the_traceback(gemm_files, broken_load):
    res = _invoke("--debug", "disasm", gemm_files[0])
    assert isinstance(res.exception, KeyError) and res.exit_code == 1
    assert "internal error" not in res.output


def test_a_project_error_is_one_line(gemm_files, monkeypatch):
    def load(path):
        raise ProgramFormatError(f"{path}: bad header: n_insns must be a non-negative integer")
    monkeypatch.setattr(Program, "load", staticmethod(load))
    res = _invoke("disasm", gemm_files[0])
    assert res.exit_code == 1
    assert res.output == f"Error: {gemm_files[0]}: bad header: n_insns must be a non-negative integer\n"


@pytest.mark.parametrize("exc,internal", [
    (PermissionError(13, "Permission denied", "/data/p.vtaprog"), False),
    (OSError(28, "No space left on device"), True),   # names no file: not the user's input
])
def test_an_os_error_is_a_user_error_only_when_it_names_a_file(gemm_files, monkeypatch, exc,
                                                                internal):
    def load(path):
        raise exc
    monkeypatch.setattr(Program, "load", staticmethod(load))
    res = _invoke("disasm", gemm_files[0])
    if internal:
        assert res.exit_code == INTERNAL_EXIT and "internal error: OSError" in res.output
    else:
        assert (res.exit_code, res.output) == (1, "Error: /data/p.vtaprog: Permission denied\n")
