"""Pooling, reductions, softmax and layer norm."""
from __future__ import annotations

import pytest

from compiler.graph import Op, make


@pytest.mark.parametrize("kernel,strides,pads,ceil", [((3, 3), (2, 2), (1, 1, 1, 1), 0),
                                                      ((2, 2), (2, 2), (0, 0, 0, 0), 1)])
def test_max_pool(case, kernel, strides, pads, ceil):
    x = case.input("x", (1, 4, 11, 11))
    case.check(make(Op.MAX_POOL, x, kernel=kernel, strides=strides, pads=pads, ceil_mode=ceil))


@pytest.mark.parametrize("include_pad", [0, 1])
def test_avg_pool(case, include_pad):
    x = case.input("x", (1, 3, 9, 9))
    case.check(make(Op.AVG_POOL, x, kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1),
                    count_include_pad=include_pad))


def test_global_avg_pool_after_relu(case):
    x = case.input("x", (1, 16, 7, 7))
    case.check(make(Op.GLOBAL_AVG_POOL, make(Op.RELU, x)))


def test_reduce_mean(case):
    x = case.input("x", (2, 6, 10))
    case.check(make(Op.REDUCE_MEAN, x, axes=(1,), keepdims=0), make(Op.REDUCE_MEAN, x, axes=(2,)))


def test_softmax(case):
    x = case.input("x", (1, 2, 5, 12))
    case.check(make(Op.SOFTMAX, x, axis=3), make(Op.SOFTMAX, x, axis=1))


def test_layer_norm(case):
    x = case.input("x", (1, 6, 32))
    g = case.rand_param("g", (32,))
    b = case.rand_param("b", (32,))
    case.check(make(Op.LAYER_NORM, x, g, b, axis=2, epsilon=1e-5))
