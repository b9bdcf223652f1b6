"""The one error type of the module loader."""

from vta_hw.errors import VtaError


class RuntimeModuleError(VtaError, ValueError):
    """A module is missing, malformed, damaged, of an earlier format, built for CPU features
    this machine lacks, or an input is wrong. The message is one line that names the file
    (or input) and says what to do."""
