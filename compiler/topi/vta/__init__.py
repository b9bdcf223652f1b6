"""Operators for the VTA accelerator: environment, tensor intrinsics, conv2d, dense, add.

``conv2d_program(cfg, data_shape, kernel_shape, strides, padding, shift=, relu=, bias=)``,
``dense_program(cfg, data_shape, weight_shape, ...)`` and ``add_program(cfg, shape,
la=, lb=, shift=, relu=)`` (the residual add) compile a quantized operator into a
``vta_hw.program.Program`` with pack/unpack helpers.
``te_conv2d.conv2d_te_program`` is the same operator through te + ``tir.lower``.
"""
from .add import AddKernel, add_program
from .conv2d import Conv2dKernel, DenseKernel, conv2d_ir, conv2d_program, dense_program
from .environment import ACC_SCOPE, INP_SCOPE, UOP_SCOPE, WGT_SCOPE, Env
from .intrin import alu, gemm, gemm_intrin
from .layout import (add_reference, conv2d_reference, dense_reference, pack_matrix, pack_nchw,
                     pack_oihw, unpack_matrix, unpack_nchw)
from .tiling import Conv2dShape, Tiling, TilingError, candidates, search

__all__ = ["ACC_SCOPE", "AddKernel", "Conv2dKernel", "Conv2dShape", "DenseKernel", "Env",
           "INP_SCOPE", "Tiling", "TilingError", "UOP_SCOPE", "WGT_SCOPE", "add_program",
           "add_reference", "alu", "candidates", "conv2d_ir", "conv2d_program",
           "conv2d_reference", "dense_program", "dense_reference", "gemm", "gemm_intrin",
           "pack_matrix", "pack_nchw", "pack_oihw", "search", "unpack_matrix", "unpack_nchw"]
