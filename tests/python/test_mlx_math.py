"""Differential tests against real MLX: small math, aliases, constants, scans
and counts, windows (mx.degrees ... mx.blackman)."""
import math

import numpy as np
import pytest

import alloy.core as ax
import mlx.core as mlx_core
from mlx_oracle import Dt, random_array, same, same_error

FLOATS = ["float32", "float16", "bfloat16"]


def with_specials(rng, shape, dtype):
    x = random_array(rng, shape, dtype).astype(np.float32)
    flat = x.reshape(-1)
    for i, v in zip(rng.choice(flat.size, size=min(3, flat.size), replace=False), [np.nan, np.inf, -np.inf]):
        flat[i] = v
    return x.astype(random_array(rng, (1,), dtype).dtype)


@pytest.mark.parametrize("name,other", [("acos", "arccos"), ("acosh", "arccosh"), ("asin", "arcsin"),
                                        ("asinh", "arcsinh"), ("atan", "arctan"), ("atanh", "arctanh"),
                                        ("atan2", "arctan2"), ("pow", "power"),
                                        ("bitwise_left_shift", "left_shift"),
                                        ("bitwise_right_shift", "right_shift")])
def test_aliases_are_the_same_functions(name, other):
    assert (getattr(mlx_core, name) is getattr(mlx_core, other)) == (getattr(ax, name) is getattr(ax, other))


@pytest.mark.parametrize("name", ["acos", "asin", "atan", "atanh", "asinh"])
def test_inverse_trig_aliases(rng, name):
    same(name, random_array(rng, (3, 4), "float32", -0.9, 0.9))


def test_binary_aliases(rng):
    a, b = random_array(rng, (2, 3), "float32", 0.5, 2), random_array(rng, (3,), "float32")
    same("atan2", a, b)
    same("pow", a, b)
    same("pow", a, 2)
    i = random_array(rng, (4,), "int32", 0, 5)
    same("bitwise_left_shift", i, np.array([1, 2, 3, 0], np.int32))
    same("bitwise_right_shift", i, 1)


def test_constants():
    for name in ["e", "pi", "inf", "euler_gamma"]:
        assert getattr(ax, name) == getattr(mlx_core, name) and type(getattr(ax, name)) is float
    assert math.isnan(ax.nan) and ax.newaxis is None and mlx_core.newaxis is None
    x = ax.ones((2, 3))
    assert x[:, ax.newaxis].shape == (2, 1, 3)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32", "uint8", "bool", "complex64"])
@pytest.mark.parametrize("name", ["degrees", "radians"])
def test_degrees_radians(rng, name, dtype):
    same(name, random_array(rng, (3, 5), dtype))
    same(name, random_array(rng, (), dtype))


def test_degrees_scalar_and_strided(rng):
    same("degrees", 2)
    same("radians", 90.0)
    x = random_array(rng, (4, 6), "float32")
    same(lambda m, a: m.degrees(a.T[::2]), x)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32", "int8", "bool"])
def test_trunc_positive(rng, dtype):
    x = random_array(rng, (5, 4), dtype, -3, 3)
    same("trunc", x)
    same("positive", x)
    same(lambda m, a: m.trunc(a.T), x)
    same("trunc", np.zeros((0, 3), np.float32))


def test_trunc_special_values(rng):
    same("trunc", with_specials(rng, (10,), "float32"))
    same("trunc", np.array([-0.5, 0.5, -1.0, 2.9999], np.float32))


def test_trunc_complex_error():
    same_error("trunc", np.array([1 + 2j], np.complex64))


@pytest.mark.parametrize("dtypes", [("bool", "bool"), ("int32", "float32"), ("float16", "uint8")])
def test_logical_xor(rng, dtypes):
    a = random_array(rng, (3, 4), dtypes[0], -1, 1)
    b = random_array(rng, (4,), dtypes[1], -1, 1)
    same("logical_xor", a, b)
    same("logical_xor", a, 0)
    same("logical_xor", True, a)


@pytest.mark.parametrize("dtype", ["int32", "int8", "uint16", "float32", "float16"])
def test_divmod(rng, dtype):
    a = random_array(rng, (3, 4), dtype, -5, 5)
    b = random_array(rng, (4,), dtype, 1, 5)
    same("divmod", a, b)
    same("divmod", a, 3)
    same("divmod", 7, b)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_floor_divide_matches_mlx_exactly(rng, dtype):
    # MLX floors the quotient rounded to the dtype: 1 // 0.1 is 10 in float32
    # (numpy: 9), 7 // 1.167 is 6 in float16. Quotients near integers, where
    # a different formulation lands one off.
    x = rng.uniform(-50, 50, 4000).astype(np.float32)
    y = rng.uniform(-5, 5, 4000).astype(np.float32)
    y[np.abs(y) < 0.05] = 0.5
    x[:2], y[:2] = [1.0, 7.0], [0.1, 1.1669921875]
    want = mlx_core.floor_divide(mlx_core.array(x).astype(getattr(mlx_core, dtype)),
                                 mlx_core.array(y).astype(getattr(mlx_core, dtype)))
    got = ax.floor_divide(ax.array(x).astype(getattr(ax, dtype)), ax.array(y).astype(getattr(ax, dtype)))
    assert got.dtype == getattr(ax, dtype)
    np.testing.assert_array_equal(np.array(got.astype(ax.float32)), np.array(want.astype(mlx_core.float32)))


def test_divmod_errors():
    same_error("divmod", np.array([1 + 2j], np.complex64), 2)
    same_error("divmod", np.ones((2, 3), np.float32), np.ones((4,), np.float32))


@pytest.mark.parametrize("dtype", FLOATS + ["int32", "bool", "complex64"])
def test_isposinf_isneginf(rng, dtype):
    x = with_specials(rng, (4, 5), dtype) if dtype in FLOATS else random_array(rng, (4, 5), dtype)
    same("isposinf", x)
    same("isneginf", x)
    same(lambda m, a: m.isneginf(a.T), x)


@pytest.mark.parametrize("dtype", FLOATS)
def test_nan_to_num(rng, dtype):
    x = with_specials(rng, (4, 5), dtype)
    same("nan_to_num", x)
    same("nan_to_num", x, nan=1.5, posinf=100, neginf=-7.0)
    same("nan_to_num", x, 2.0, None, -1.0)
    same(lambda m, a: m.nan_to_num(a[::2, 1:]), x)


def test_nan_to_num_other_dtypes(rng):
    same("nan_to_num", random_array(rng, (3,), "int32"))
    same("nan_to_num", random_array(rng, (3,), "bool"))
    same("nan_to_num", float("nan"))
    same_error("nan_to_num", np.array([1 + 2j], np.complex64))


# ---- scans and counts

@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32", "bool"])
@pytest.mark.parametrize("axis", [None, 0, -1])
def test_logcumsumexp(rng, dtype, axis):
    x = random_array(rng, (3, 6), dtype, -3, 3)
    same("logcumsumexp", x, axis)
    for reverse in (False, True):
        same("logcumsumexp", x, axis=axis, reverse=reverse, inclusive=False)
    same(lambda m, a: a.logcumsumexp(axis, reverse=True), x)


def test_logcumsumexp_wide_range_and_layouts(rng):
    # Values far below the running maximum must not underflow to -inf.
    same("logcumsumexp", np.array([-1000.0, 0.0, -2000.0, 5.0], np.float32))
    same("logcumsumexp", with_specials(rng, (12,), "float32"))
    x = random_array(rng, (4, 5, 3), "float32")
    same(lambda m, a: m.logcumsumexp(a.transpose(2, 0, 1), axis=1), x)
    same("logcumsumexp", x, axis=1)  # a scan with inner > 1
    same("logcumsumexp", np.array(2.0, np.float32))
    same("logcumsumexp", np.zeros((0, 3), np.float32), axis=0)
    same_error("logcumsumexp", x, axis=3)


@pytest.mark.parametrize("reverse,inclusive", [(False, True), (True, True), (False, False), (True, False)])
def test_logcumsumexp_grad(rng, reverse, inclusive):
    x = random_array(rng, (3, 5), "float32")
    w = random_array(rng, (3, 5), "float32")

    def f(m):
        return lambda a: (m.logcumsumexp(a, axis=1, reverse=reverse, inclusive=inclusive) * m.array(w)).sum()

    got = ax.grad(f(ax))(ax.array(x))
    want = mlx_core.grad(f(mlx_core))(mlx_core.array(x))
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-4, atol=1e-5)
    # Forward mode agrees with a finite difference along a random direction.
    t = random_array(rng, (3, 5), "float32")
    _, (jv,) = ax.jvp(lambda a: ax.logcumsumexp(a, axis=1, reverse=reverse, inclusive=inclusive),
                      [ax.array(x)], [ax.array(t)])
    h = 1e-3
    y = lambda a: np.array(mlx_core.logcumsumexp(mlx_core.array(a), axis=1, reverse=reverse,  # noqa: E731
                                                 inclusive=inclusive), dtype=np.float64)
    with np.errstate(invalid="ignore"):  # -inf - -inf at the empty first position of an exclusive scan
        fd = (y(x + h * t) - y(x - h * t)) / (2 * h)
    fd = np.where(np.isfinite(fd), fd, 0.0)
    np.testing.assert_allclose(np.array(jv), fd, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
@pytest.mark.parametrize("dtype", ["float32", "int32", "int8", "float16"])
def test_cumulative(rng, name, dtype):
    x = random_array(rng, (3, 4), dtype, -2, 2)
    same(name, x)
    same(name, x, 0, reverse=True)
    same(name, x, axis=-1, inclusive=False)
    same(name, x, 1, dtype=Dt("float32"))
    same(name, x, dtype=Dt("int32"))
    same(lambda m, a: getattr(m, name)(a.T, axis=0), x)


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod", "cumprod"])
def test_cumulative_bool(rng, name):
    x = random_array(rng, (3, 7), "bool")
    x[:, 0] = True  # so a product stays true for a while
    same(name, x, axis=1)
    same(name, x, axis=1, reverse=True, inclusive=False)


@pytest.mark.parametrize("dtype", ["float32", "int32", "bool", "complex64", "float16"])
def test_count_nonzero(rng, dtype):
    x = random_array(rng, (3, 4, 2), dtype, -1, 1)
    x = np.where(rng.random(x.shape) < 0.4, np.zeros((), x.dtype), x)
    same("count_nonzero", x)
    same("count_nonzero", x, axis=1)
    same("count_nonzero", x, axis=(0, -1), keepdims=True)
    same(lambda m, a: m.count_nonzero(a.transpose(2, 0, 1), axis=-1), x)
    same("count_nonzero", np.asarray(x[0, 0, 0]))


def test_count_nonzero_errors():
    same_error("count_nonzero", np.zeros((2, 3), np.float32), axis=5)
    same_error("count_nonzero", np.zeros((2, 3), np.float32), axis=(0, 0))


@pytest.mark.parametrize("dtype", ["float32", "int16", "uint8", "bfloat16"])
def test_minmax(rng, dtype):
    x = random_array(rng, (4, 3, 5), dtype)
    same("minmax", x)
    same("minmax", x, 1)
    same("minmax", x, axis=(0, 2), keepdims=True)
    same(lambda m, a: m.minmax(a.T, -1), x)
    same_error("minmax", x, axis=3)


# ---- windows

@pytest.mark.parametrize("name", ["hamming", "hanning", "bartlett", "blackman"])
def test_windows(name):
    for M in [-3, 0, 1, 2, 5, 12, 51]:
        same(name, M)
    same(lambda m: getattr(m, name)(M=7))
