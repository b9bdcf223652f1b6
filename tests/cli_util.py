"""Running the ``vta`` CLI in-process from tests."""
from __future__ import annotations

from click.testing import CliRunner

from driver.cli.main import cli


def run_cli(*args):
    """Invoke the ``vta`` CLI with ``args`` (paths allowed); the click ``Result``."""
    return CliRunner().invoke(cli, list(map(str, args)))
