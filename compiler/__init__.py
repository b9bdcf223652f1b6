"""The compiler: graph IR, tensor expressions (`te`), loop IR (`tir`), code generation.

Kept free of imports so that `import compiler.tir` stays cheap; import the
subpackage you need.
"""

import importlib


#: callable modules: ``compiler.build(...)`` builds one kernel, ``compiler.build_model(...)``
#: a whole model for any target (each module is also the function of its name)
_CALLABLE = ("build", "build_model")


def __getattr__(name: str):
    """``compiler.build`` and ``compiler.build_model`` without importing LLVM at ``import compiler``."""
    if name in _CALLABLE:
        return importlib.import_module(f"compiler.{name}")
    raise AttributeError(f"module 'compiler' has no attribute {name!r}")
