"""parse_target normalises vendor-less Linux triples, so ARMv7 objects use the hard-float
calling convention their C library (gnueabihf) expects."""
from __future__ import annotations

import llvmlite.binding as llvm
import pytest

from compiler.codegen.llvm.target import normalize_triple, parse_target


@pytest.mark.parametrize("given,expected", [
    ("armv7-linux-gnueabihf", "armv7-unknown-linux-gnueabihf"),
    ("aarch64-linux-gnu", "aarch64-unknown-linux-gnu"),
    ("aarch64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"),
    ("wasm32-unknown-unknown", "wasm32-unknown-unknown"),
    ("x86_64-pc-linux-gnu", "x86_64-pc-linux-gnu"),
])
def test_normalize_triple(given, expected):
    assert normalize_triple(given) == expected


def test_armv7_passes_floats_in_vfp_registers():
    """float f(float a, float b) { return a * b; }: hard-float is one vmul on s0, s1;
    soft-float would move the arguments from r0/r1 first."""
    t = parse_target("armv7")
    mod = llvm.parse_assembly(f'target triple = "{t.triple}"\n'
                              "define float @f(float %a, float %b) {\n"
                              "  %c = fmul float %a, %b\n  ret float %c\n}\n")
    asm = t.machine().emit_assembly(mod)
    body = [ln.split() for ln in asm.splitlines() if ln.strip().startswith(("vmul", "vmov"))]
    assert body == [["vmul.f32", "s0,", "s0,", "s1"]], asm
