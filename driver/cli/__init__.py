"""The ``vta`` command line: a thin layer over the public Python API."""
from driver.cli.main import main

__all__ = ["main"]
