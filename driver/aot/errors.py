"""The one error type of deploying AOT modules (``driver.aot``)."""

from vta_hw.errors import VtaError


class DeployError(VtaError, RuntimeError):
    """A toolchain or emulator is missing (the message names its Debian package), the
    harness does not build, or it exits with a non-zero status (the message holds its
    status and its one-line explanation)."""
