"""C toolchains that build the AOT harness, one registry entry per machine.

Each entry names the C compiler driver, the Debian package that provides it, and
the emulator (Debian ``qemu-user``) that runs its programs on a machine of another
architecture. Cross programs link statically, so ``qemu-aarch64 ./prog`` needs no
sysroot. ``tools/system_deps.sh`` installs every package here.
"""
from __future__ import annotations

import os
import platform
import shutil
from dataclasses import dataclass

from .errors import DeployError


@dataclass(frozen=True)
class Toolchain:
    """How to build and run a C program for one machine.

    Attributes:
        arch: the target triple's first component (``x86_64``, ``aarch64``, ``armv7``).
        cc: the C compiler driver (``$CC`` overrides the host's).
        cc_package: the Debian package that provides ``cc``.
        emulator: the user-mode emulator that runs its programs elsewhere (``qemu-arm``).
        emulator_package: the Debian package that provides ``emulator``.
        static: link programs statically (cross machines: no sysroot needed to run them).
    """

    arch: str
    cc: str
    cc_package: str
    emulator: "str | None" = None
    emulator_package: "str | None" = None
    static: bool = True

    @property
    def native(self) -> bool:
        """Whether its programs run directly on this machine."""
        return _host_arch() == self.arch

    def compiler(self) -> str:
        return os.environ.get("CC", self.cc) if self.native else self.cc

    def run_prefix(self) -> list:
        """The command prefix that runs one of its programs here (``[]`` or ``[qemu-...]``)."""
        return [] if self.native else [self.emulator]

    def missing(self) -> "str | None":
        """What is missing to build and run its programs here, naming the package; None if
        nothing is."""
        if shutil.which(self.compiler()) is None:
            return (f"the C compiler {self.compiler()} for {self.arch} is not installed "
                    f"(Debian: apt-get install {self.cc_package}; or run tools/system_deps.sh)")
        if not self.native and (self.emulator is None or shutil.which(self.emulator) is None):
            return (f"the emulator {self.emulator} for {self.arch} programs is not installed "
                    f"(Debian: apt-get install {self.emulator_package}; or run "
                    "tools/system_deps.sh)")
        return None

    def require(self) -> "Toolchain":
        """``self``, or DeployError naming the missing tool and its package."""
        why = self.missing()
        if why:
            raise DeployError(why)
        return self


def _host_arch() -> str:
    m = platform.machine()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(m.lower(), m)


#: target triple's first component -> toolchain
TOOLCHAINS = {
    "x86_64": Toolchain("x86_64", "cc", "gcc", "qemu-x86_64", "qemu-user", static=False),
    "aarch64": Toolchain("aarch64", "aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu",
                         "qemu-aarch64", "qemu-user"),
    "armv7": Toolchain("armv7", "arm-linux-gnueabihf-gcc", "gcc-arm-linux-gnueabihf",
                       "qemu-arm", "qemu-user"),
}


def toolchain_for(triple: str) -> Toolchain:
    """The toolchain of the machine ``triple`` names (``aarch64-linux-gnu``, ...).

    Raises:
        DeployError: no entry for that architecture (wasm32 modules run through the
            JavaScript runtime instead).
    """
    arch = triple.split("-")[0]
    if arch not in TOOLCHAINS:
        raise DeployError(f"no C toolchain for triple {triple!r}; the harness builds for "
                          f"{', '.join(TOOLCHAINS)} (wasm32 modules run through the JavaScript "
                          "runtime)")
    return TOOLCHAINS[arch]
