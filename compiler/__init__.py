"""The compiler: graph IR, tensor expressions (`te`), loop IR (`tir`), code generation.

Kept free of imports so that `import compiler.tir` stays cheap; import the
subpackage you need.
"""

import importlib


def __getattr__(name: str):
    """``compiler.build`` without importing LLVM at ``import compiler``."""
    if name == "build":
        return importlib.import_module("compiler.build")
    raise AttributeError(f"module 'compiler' has no attribute {name!r}")
