"""The accelerator backend: tensorized, DMA-annotated loop IR -> a ``vta_hw.program.Program``.

``codegen`` (the driver: ``build``), ``dma`` (LOAD/STORE from DMA copies), ``uops``
(uop folding), ``threads`` (virtual threads), ``tokens`` (dependency tokens and
their verifier), ``eval`` (index evaluation and ``CodegenError``).
"""
