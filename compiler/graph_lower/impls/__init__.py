"""Implementations of every graph op, one module per family; importing this package registers
them all in ``compiler.graph_lower.strategy.REGISTRY``."""

from . import (conv, conv_bf16, conv_bf16_amx, dense, dense_bf16, injective,  # noqa: F401
               pool, reduction)
