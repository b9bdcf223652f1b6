"""Op definitions, one module per family; importing this package registers them all."""

from . import elementwise, leaves, nn, norm, quant, resize, transform  # noqa: F401
