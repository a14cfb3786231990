"""Leftover mlx.core names against real MLX: random.laplace,
hadamard_transform, from_dlpack, get_array_buffer_size."""
import numpy as np
import pytest

import alloy.core as mx
import mlx.core as mlx_core
from mlx_oracle import random_array, same, same_error, to_numpy


def test_laplace_matches_mlx_for_a_key(rng):
    seed = int(rng.integers(2**31))
    # Bit for bit on the CPU, as MLX's CPU computes; the GPU's log1p may
    # differ from the host's in the last float32 place.
    tol = 2e-7 if mx.default_device() == mx.gpu else 0
    for dtype in ["float32", "float16", "bfloat16"]:
        same(lambda m: m.random.laplace((3, 40), getattr(m, dtype), key=m.random.key(seed)), rtol=tol, atol=0)
    same(lambda m: m.random.laplace([7], m.float32, -1.5, 0.25, m.random.key(seed)), rtol=tol, atol=0)
    # loc - scale * log1p(...) cancels near 0: a last-place difference of the
    # log term (of magnitude ~loc) is then larger than 2e-7 of the result.
    shifted_atol = 1e-6 if mx.default_device() == mx.gpu else 0
    same(lambda m: m.random.laplace(shape=(2, 2), loc=3.0, scale=2.0, key=m.random.key(seed)), rtol=tol,
         atol=shifted_atol)
    same_error(lambda m: m.random.laplace((2,), m.int32))


def test_laplace_distribution():
    x = to_numpy(mx.random.laplace((200_000,), loc=1.0, scale=2.0))
    # Mean loc, variance 2 b^2, median loc.
    assert abs(x.mean() - 1.0) < 0.05
    assert abs(x.var() - 8.0) < 0.3
    assert abs(np.median(x) - 1.0) < 0.05


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32"])
def test_hadamard_transform(rng, dtype):
    for n in [1, 2, 16, 256, 2048]:
        x = random_array(rng, (3, n), dtype)
        same("hadamard_transform", x)
    same("hadamard_transform", random_array(rng, (2, 2, 64), dtype), scale=0.5)
    same(lambda m, x: m.hadamard_transform(x, 1.0), random_array(rng, (8,), dtype))


def test_hadamard_transform_scalar_and_errors(rng):
    same("hadamard_transform", np.array(2.0, np.float32))
    same("hadamard_transform", np.array([3], np.int32))
    same("hadamard_transform", np.array([3], np.int32), scale=2.0)
    same_error("hadamard_transform", 2.0)
    same_error("hadamard_transform", np.ones(6, np.float32))
    same_error("hadamard_transform", np.ones((2, 0), np.float32))


def test_hadamard_matches_sylvester_matrix(rng):
    n = 32
    h = np.array([[1.0]])
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    x = random_array(rng, (4, n))
    np.testing.assert_allclose(to_numpy(mx.hadamard_transform(mx.array(x), scale=1.0)), x @ h.T, rtol=1e-5,
                               atol=1e-5)


def test_from_dlpack(rng):
    for dtype in ["float32", "float16", "int64", "int16", "uint8", "bool", "float64"]:
        same("from_dlpack", random_array(rng, (3, 4), dtype))
    same("from_dlpack", random_array(rng, (3, 4), "int32").T)
    same("from_dlpack", np.float32(2.5))
    same("from_dlpack", random_array(rng, (5,)), copy=True)
    same(lambda m, x: m.from_dlpack(m.array(x)), random_array(rng, (5,), "int32"))
    same_error("from_dlpack", random_array(rng, (5,)), copy=False)
    same_error("from_dlpack", 3.0)


def test_from_dlpack_copies():
    x = np.arange(6, dtype=np.float32)
    y = mx.from_dlpack(x)
    x[0] = 100.0
    assert to_numpy(y)[0] == 0.0


def test_get_array_buffer_size():
    for m in (mx, mlx_core):
        a = m.ones((100,))
        b, c, r = a[10:20], a * 2, a.reshape(10, 10)
        m.eval(b, c, r)
        one = m.get_array_buffer_size(a)
        # A buffer is at least its array; views count once; trees and non-arrays are walked/ignored.
        assert one >= 400
        assert m.get_array_buffer_size(a, b, r) == one
        assert m.get_array_buffer_size([a, {"x": b}], c, 3, "x") == one + m.get_array_buffer_size(c)
        assert m.get_array_buffer_size() == 0
    same_error(lambda m: m.get_array_buffer_size(m.ones((3,)) + 1))
