"""Host side: runtime, device backends and the ``vta`` command line."""
