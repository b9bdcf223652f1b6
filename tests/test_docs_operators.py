"""docs/operators.md is what tools/operator_table.py generates from the registries, it is in
the documentation site's toctree, and the page's claim that every graph op lowers on every
target holds (each has a CPU implementation, which the GPU route schedules as GPU kernels)."""
import importlib.util
from pathlib import Path

from compiler.graph import Op
from compiler.graph.ops import LEAVES
from compiler.graph_lower.strategy import default_registry

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("operator_table", ROOT / "tools" / "operator_table.py")
table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(table)


def test_page_matches_the_registries():
    assert (ROOT / "docs" / "operators.md").read_text() == table.render(), \
        "docs/operators.md is stale: run python tools/operator_table.py"


def test_every_graph_op_has_a_cpu_implementation():
    registry = default_registry()
    missing = [op.name for op in Op if op not in LEAVES and op is not Op.FUSED
               and not registry.implementations(op)]
    assert missing == []


def test_every_onnx_operator_is_listed_once():
    from compiler.frontend.onnx import SUPPORTED_OPS
    rows = [line.split("|")[1].strip(" `") for line in table.onnx_table() if line.startswith("| `")]
    assert rows == sorted(SUPPORTED_OPS)


def test_page_is_in_the_toctree():
    index = (ROOT / "docs" / "index.md").read_text()
    assert "\noperators\n" in index
