"""A named CPU's implied LLVM features (``codegen.llvm.cpu_features``) reach the target,
path selection and the module manifest."""
import pytest

from compiler.codegen.llvm.cpu_features import cpu_features, merge
from compiler.codegen.llvm.target import parse_target
from compiler.graph_lower.build import cpu_record
from compiler.quant.kernels import select

X86 = "x86_64-unknown-linux-gnu"


@pytest.mark.parametrize("cpu, has, lacks", [
    ("haswell", {"avx2", "fma"}, {"avx512f", "avx512vnni"}),
    ("skylake-avx512", {"avx512f", "avx512bw"}, {"avx512vnni", "avx512bf16"}),
    ("cascadelake", {"avx512vnni"}, {"avx512bf16", "amx-tile"}),
    ("sapphirerapids", {"avx512vnni", "avx512bf16", "avxvnni", "amx-tile", "amx-int8",
                        "amx-bf16"}, set()),
    ("x86-64-v4", {"avx512f", "avx512vl"}, {"avx512vnni"}),
    ("x86-64", {"sse2"}, {"avx", "sse4.2"}),
])
def test_x86_cpu_implies_llvm_features(cpu, has, lacks):
    feats = set(cpu_features(X86, cpu))
    assert has <= feats and not (lacks & feats)


def test_aarch64_cpu_features():
    assert "dotprod" in cpu_features("aarch64-unknown-linux-gnu", "neoverse-n1")
    assert "dotprod" not in cpu_features("aarch64-unknown-linux-gnu", "cortex-a53")


def test_unprobed_architecture_has_no_features():
    assert cpu_features("wasm32-unknown-unknown", "generic") == ()


def test_mattr_overrides_implied_features():
    assert merge(("avx2", "avx512vnni"), "-avx512vnni,+amx-tile,fma") == \
        "+avx2,-avx512vnni,+amx-tile,+fma"


def test_mcpu_without_mattr_selects_vnni_and_records_it():
    tgt = parse_target("llvm -mcpu=cascadelake")
    assert tgt.vector_bits == 512 and select(tgt.features).name.startswith("vnni")
    assert "+avx512vnni" in cpu_record(tgt)["features"]
    assert str(tgt).endswith("-mcpu=cascadelake")           # the implied list is not printed


def test_mattr_removes_an_implied_feature():
    tgt = parse_target("llvm -mcpu=cascadelake -mattr=-avx512vnni")
    assert "+avx512vnni" not in cpu_record(tgt)["features"]
    assert not select(tgt.features).name.startswith("vnni")
    assert str(tgt).endswith("-mattr=-avx512vnni")
