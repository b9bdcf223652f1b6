"""The shipped CPU logs: one per ISA class a development machine offers (AVX2; AVX-512 with
VNNI and BF16), each distilled (one record per workload) from one CPU that the logs' README
names. Reads the files only: fast, the same on any machine."""
from __future__ import annotations

import pytest

from compiler.autotune.apply import SHIPPED_DIR
from compiler.autotune.isa_class import describe_class, exact_key, isa_class
from compiler.autotune.record import read_records


def _cpu_logs():
    return sorted(SHIPPED_DIR.glob("cpu_*.jsonl"))


def test_a_cpu_log_ships_for_each_development_isa_class():
    classes = {describe_class(isa_class(r.target)) for p in _cpu_logs()
               for r in read_records(p)}
    assert {"avx2, 256-bit", "avx512 + avx512vnni + avx512bf16, 512-bit"} <= classes


@pytest.mark.parametrize("path", _cpu_logs(), ids=lambda p: p.name)
def test_a_cpu_log_is_one_cpus_distilled_records_and_the_readme_names_it(path):
    recs = read_records(path)
    assert recs and not any(r.error for r in recs)
    assert {exact_key(r.target) for r in recs} == {exact_key(recs[0].target)}   # one CPU
    assert path.stem == f"cpu_{recs[0].target['cpu']}"
    assert len({r.key for r in recs}) == len(recs)                               # distilled
    readme = (SHIPPED_DIR / "README.md").read_text()
    assert f"`{path.name}`" in readme and describe_class(isa_class(recs[0].target)) in readme
