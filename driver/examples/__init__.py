"""Example programs the ``vta example`` command builds (hand-written instruction streams)."""
