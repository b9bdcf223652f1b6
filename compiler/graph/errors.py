"""Errors raised by the graph IR and its passes."""

from vta_hw.errors import VtaError


class GraphError(VtaError, ValueError):
    """A graph node is ill-formed: bad shapes, dtypes or attributes.

    The message names the op (and node label when known), the bad value and the fix.
    """
