"""Complex numbers in MLX's order, against real MLX: by real part, then by
imaginary part. MLX's maximum/minimum, comparisons, max/min/argmax/argmin,
cummax/cummin, and the log-sum-exp family (logaddexp, logsumexp,
logcumsumexp, softmax, which shift by that maximum) all take complex64.

Real parts are drawn from a few integers so that ties, which the imaginary
part decides, are common.
"""
import numpy as np
import pytest

import alloy.core as mx
from mlx_oracle import same, same_error


def tied_complex(rng, shape):
    re = rng.integers(-2, 3, size=shape).astype(np.float32)
    im = rng.uniform(-2, 2, size=shape).astype(np.float32)
    return (re + 1j * im).astype(np.complex64)


@pytest.mark.parametrize("name", ["maximum", "minimum", "less", "less_equal", "greater", "greater_equal",
                                  "equal", "not_equal"])
def test_complex_elementwise_order(rng, name):
    a, b = tied_complex(rng, (6, 9)), tied_complex(rng, (9,))
    b[:3] = a[0, :3]  # some equal pairs
    same(name, a, b)


def test_complex_order_with_real_operands(rng):
    a = tied_complex(rng, (4, 5))
    same("maximum", a, rng.integers(-2, 3, size=(5,)).astype(np.float32))
    same("less", a, 1.0)
    same(lambda m, x: x > m.array(0 + 0.5j), a)


@pytest.mark.parametrize("name", ["max", "min"])
def test_complex_max_min(rng, name):
    a = tied_complex(rng, (5, 7, 3))
    same(name, a)
    for axis in [0, 1, 2, (0, 2), -1]:
        same(name, a, axis=axis)
    same(name, a, axis=1, keepdims=True)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_complex_argmax_argmin(rng, name):
    a = tied_complex(rng, (6, 40))
    same(name, a)
    same(name, a, axis=0)
    same(name, a, axis=1, keepdims=True)
    # A long axis (the GPU splits it over blocks).
    same(name, tied_complex(rng, (3, 10000)), axis=1)


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_complex_running_max_min(rng, name):
    a = tied_complex(rng, (4, 33))
    same(name, a, axis=1)
    same(name, a, axis=0, reverse=True)
    same(name, a, axis=1, inclusive=False)


def test_complex_log_sum_exp_family(rng):
    a = (rng.uniform(-2, 2, (5, 8)) + 1j * rng.uniform(-2, 2, (5, 8))).astype(np.complex64)
    b = (rng.uniform(-2, 2, (8,)) + 1j * rng.uniform(-2, 2, (8,))).astype(np.complex64)
    same("logaddexp", a, b)
    same("logsumexp", a)
    same("logsumexp", a, axis=1)
    same("logsumexp", a, axis=0, keepdims=True)
    same("softmax", a, axis=1)
    same("softmax", a, axis=0)
    same("logcumsumexp", a, axis=1)


def test_complex_still_refused_where_mlx_refuses(rng):
    a = tied_complex(rng, (3,))
    same_error("sigmoid", a)
    same_error("floor", a)
    same_error("remainder", a, a)


def test_complex_floor_divide_is_divide_and_round_rounds_each_part(rng):
    a = (rng.uniform(-4, 4, (3, 5)) + 1j * rng.uniform(-4, 4, (3, 5))).astype(np.complex64)
    b = (rng.uniform(0.5, 2, (5,)) + 1j * rng.uniform(-2, 2, (5,))).astype(np.complex64)
    same("floor_divide", a, b)
    same("floor_divide", a, rng.integers(1, 4, size=(5,)).astype(np.int32))
    same("round", a)
    same("round", a, 1)
    halves = (np.array([0.5, 1.5, 2.5, -0.5]) + 1j * np.array([2.5, -1.5, 0.5, 3.5])).astype(np.complex64)
    same("round", halves)  # half to even in both parts
