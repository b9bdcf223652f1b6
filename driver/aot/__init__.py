"""Deploy AOT modules: the C harness (``harness.c``), its toolchains and emulators.

- ``toolchains``: machine -> C compiler, its Debian package, and the qemu-user
  emulator that runs its programs here (a registry, ``TOOLCHAINS``);
- ``harness``: :func:`build_harness` compiles ``harness.c`` against an AOT module's
  ``model.h`` and links its object; :func:`run_harness` runs it on arrays.

See ``docs/deploy.md``.
"""
from .errors import DeployError
from .harness import HARNESS_C, build_harness, run_harness
from .toolchains import TOOLCHAINS, Toolchain, toolchain_for

__all__ = ["DeployError", "HARNESS_C", "TOOLCHAINS", "Toolchain", "build_harness", "run_harness",
           "toolchain_for"]
