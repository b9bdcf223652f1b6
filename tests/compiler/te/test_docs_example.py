"""The usage example in compiler.te's docstring runs and lowers to vector code."""

import textwrap

import compiler.te
from compiler.tir import verify


def test_docstring_example_lowers():
    ns: dict = {}
    exec(textwrap.dedent(compiler.te.__doc__.split("::")[1]), ns)
    func = ns["func"]
    verify(func, flat=True)
    text = repr(func)
    assert "# parallel" in text and "ramp(" in text and "# vectorized" not in text
