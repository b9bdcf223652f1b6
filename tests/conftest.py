"""Fixtures shared across test folders."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from driver.cli.main import cli


@pytest.fixture(scope="session")
def gemm_files(tmp_path_factory):
    """``vta example gemm`` written once: (the ``.vtaprog`` path, its ``.expected.npz``)."""
    out = tmp_path_factory.mktemp("gemm") / "gemm.vtaprog"
    res = CliRunner().invoke(cli, ["example", "gemm", "-o", str(out)])
    assert res.exit_code == 0, res.output
    return out, out.with_name("gemm.expected.npz")
