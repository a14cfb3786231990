"""Parameter initializers, as ``mlx.nn.init``. Each factory returns a
function of an array that returns a new array of the same shape (the input
supplies only the shape)."""
import math

import alloy.core as mx


def constant(value, dtype=mx.float32):
    def initializer(a):
        return mx.full(a.shape, value, dtype=dtype)
    return initializer


def normal(mean=0.0, std=1.0, dtype=mx.float32):
    def initializer(a):
        return mx.random.normal(shape=a.shape, scale=std, loc=mean, dtype=dtype)
    return initializer


def uniform(low=0.0, high=1.0, dtype=mx.float32):
    def initializer(a):
        return mx.random.uniform(low, high, a.shape, dtype=dtype)
    return initializer


def identity(dtype=mx.float32):
    def initializer(arr):
        if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
            raise ValueError(f"The input array must be a square matrix but got shape {tuple(arr.shape)}.")
        return mx.eye(n=arr.shape[0], dtype=dtype)
    return initializer


def _fans(x):
    """(fan_in, fan_out) of a weight shaped (out, *receptive_field, in)."""
    if x.ndim < 2:
        raise ValueError(
            f"Glorot / He initialization requires at least 2 dimensional input but input with {x.ndim} dimensions."
        )
    receptive = 1
    for d in x.shape[1:-1]:
        receptive *= d
    return x.shape[-1] * receptive, x.shape[0] * receptive


def _fan(x, mode):
    fan_in, fan_out = _fans(x)
    if mode == "fan_in":
        return fan_in
    if mode == "fan_out":
        return fan_out
    raise ValueError(f"Invalid mode: {mode}. Valid modes are: fan_in, fan_out")


def glorot_normal(dtype=mx.float32):
    """N(0, gain^2 * 2 / (fan_in + fan_out))."""
    def initializer(a, gain=1.0):
        fan_in, fan_out = _fans(a)
        std = gain * math.sqrt(2.0 / (fan_in + fan_out))
        return mx.random.normal(shape=a.shape, dtype=dtype) * std
    return initializer


def glorot_uniform(dtype=mx.float32):
    """U(-l, l), l = gain * sqrt(6 / (fan_in + fan_out))."""
    def initializer(a, gain=1.0):
        fan_in, fan_out = _fans(a)
        limit = gain * math.sqrt(6.0 / (fan_in + fan_out))
        return mx.random.uniform(-limit, limit, a.shape, dtype=dtype)
    return initializer


def he_normal(dtype=mx.float32):
    """N(0, gain^2 / fan), fan = fan_in or fan_out per ``mode``."""
    def initializer(a, mode="fan_in", gain=1.0):
        std = gain / math.sqrt(_fan(a, mode))
        return mx.random.normal(shape=a.shape, dtype=dtype) * std
    return initializer


def he_uniform(dtype=mx.float32):
    """U(-l, l), l = gain * sqrt(3 / fan)."""
    def initializer(a, mode="fan_in", gain=1.0):
        limit = gain * math.sqrt(3.0 / _fan(a, mode))
        return mx.random.uniform(-limit, limit, a.shape, dtype=dtype)
    return initializer


def orthogonal(gain=1.0, dtype=mx.float32):
    """A (rows, cols) matrix with orthonormal rows or columns (whichever are
    fewer), times ``gain``: the Q of a QR factorization of a normal matrix,
    its column signs fixed by R's diagonal so the draw is uniform."""

    def initializer(a):
        if a.ndim != 2:
            raise ValueError(f"[orthogonal] needs a 2-D array, got shape {tuple(a.shape)}.")
        rows, cols = a.shape
        tall = (max(rows, cols), min(rows, cols))
        q, r = mx.linalg.qr(mx.random.normal(tall), stream=mx.cpu)
        q = q * mx.sign(mx.diagonal(r))
        if rows < cols:
            q = q.T
        return (gain * q).astype(dtype)

    return initializer


def sparse(sparsity, mean=0.0, std=1.0, dtype=mx.float32):
    """Normal(mean, std) values with ceil(sparsity * cols) zeros at random
    places in every row of a 2-D array."""

    def initializer(a):
        if a.ndim != 2:
            raise ValueError(f"[sparse] needs a 2-D array, got shape {tuple(a.shape)}.")
        rows, cols = a.shape
        zeros = math.ceil(sparsity * cols)
        # a random permutation per row: its first `zeros` places are zeroed;
        # drawn before the values, as MLX draws them (a seed gives its array)
        order = mx.argsort(mx.random.uniform(shape=(rows, cols)), axis=1)
        values = mx.random.normal((rows, cols), scale=std, loc=mean, dtype=dtype)
        drop = mx.zeros((rows, cols), dtype=mx.bool_)
        drop = mx.put_along_axis(drop, order[:, :zeros], mx.array(True), axis=1)
        return mx.where(drop, mx.zeros_like(values), values)

    return initializer
