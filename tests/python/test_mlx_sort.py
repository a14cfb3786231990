"""Sorting family against real MLX: sort, argsort, partition, argpartition,
topk, median, searchsorted, unique, random.permutation.

sort/argsort are compared exactly (stable order, NaNs last, -0.0 and 0.0 kept
in input order). partition/argpartition/topk leave the order inside each
side unspecified: on the CPU Alloy reproduces MLX's order (checked exactly),
on the GPU it returns a full sort, so every device also checks what is
specified: the kth element, the multiset on each side, the partition property.
"""
import os

import numpy as np
import pytest

import alloy.core as mx
import mlx.core as mlx_core
from mlx_oracle import Dt, random_array, same, same_error, to_numpy

ALL_DTYPES = ["float32", "float16", "bfloat16", "float64", "complex64", "int8", "int16", "int32", "int64",
              "uint8", "uint16", "uint32", "uint64", "bool"]
FLOATS = ["float32", "float16", "bfloat16", "float64"]
ON_CPU = os.environ.get("ALLOY_TEST_DEVICE", "cpu") != "gpu"


def tie_heavy(rng, shape, dtype):
    """Values with many ties; floats also get NaN, +-inf and both zeros."""
    if dtype in FLOATS or dtype == "complex64":
        x = np.round(rng.uniform(-3, 3, shape)).astype(np.float64)
        if x.size:
            flat = x.reshape(-1)
            k = max(1, flat.size // 6)
            flat[rng.choice(flat.size, k, replace=False)] = np.nan
            flat[rng.choice(flat.size, k, replace=False)] = rng.choice([np.inf, -np.inf, -0.0, 0.0], k)
        if dtype == "complex64":
            imag = np.round(rng.uniform(-1, 1, shape))
            return (x + 1j * imag).astype(np.complex64)
        if dtype == "bfloat16":
            import ml_dtypes
            return x.astype(ml_dtypes.bfloat16)
        return x.astype(dtype)
    return random_array(rng, shape, dtype, low=-0.3, high=0.3)


# ---- sort / argsort

@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape,axis", [((13,), -1), ((4, 9), 0), ((3, 4, 5), 1), ((3, 7), None)])
def test_sort_argsort_dtypes_ties_nans(rng, dtype, shape, axis):
    x = tie_heavy(rng, shape, dtype)
    same("sort", x, axis=axis)
    same("argsort", x, axis=axis)


@pytest.mark.parametrize("n", [2048, 2049, 5000])
def test_rows_longer_than_one_tile(rng, n):
    x = tie_heavy(rng, (2, n), "float32")
    same("argsort", x)
    same("sort", x)
    same("argsort", x.T.copy(), axis=0)
    ints = random_array(rng, (n,), "int16", low=-1, high=1)
    same("argsort", ints)


def test_signed_zeros_keep_input_order():
    x = np.array([0.0, -0.0, 1.0, -0.0, 0.0, np.nan, -1.0], dtype=np.float32)
    got, want = same("sort", x)
    np.testing.assert_array_equal(np.signbit(to_numpy(got)), np.signbit(to_numpy(want)))


@pytest.mark.parametrize("op", ["sort", "argsort"])
def test_sort_non_contiguous(rng, op):
    x = tie_heavy(rng, (6, 8), "float32")
    same(lambda m, a: getattr(m, op)(m.transpose(a), axis=1), x)
    same(lambda m, a: getattr(m, op)(a[::2, 1::3], axis=0), x)
    same(lambda m, a: getattr(m, op)(m.broadcast_to(a[:1], (3, 8)), axis=-1), x)
    same(lambda m, a: getattr(m, op)(m.transpose(a), axis=None), x)


def test_sort_zero_d_and_empty():
    same("sort", np.array(2.5, np.float32), axis=None)
    same("argsort", np.array(7, np.int32), axis=None)
    for shape, axis in [((0,), -1), ((0, 3), 0), ((0, 3), 1), ((2, 0), 0), ((2, 0), -1)]:
        same("sort", np.zeros(shape, np.float32), axis=axis)
        same("argsort", np.zeros(shape, np.float32), axis=axis)


def test_sort_errors():
    same_error("sort", np.array(1.0, np.float32))  # axis -1 of a 0-d array
    same_error("argsort", np.zeros((2, 3), np.float32), axis=2)
    same_error("sort", np.zeros((2, 3), np.float32), axis=-3)
    same_error(lambda m, a: m.sort(a=a), np.zeros(3, np.float32))  # a is positional-only


# ---- partition / argpartition / topk

def check_partition(vals, kth, axis, want_vals):
    """vals (numpy, partitioned along axis) against MLX's want_vals."""
    v = np.moveaxis(vals, axis, -1).astype(np.float64)
    w = np.moveaxis(want_vals, axis, -1).astype(np.float64)
    np.testing.assert_array_equal(v[..., kth], w[..., kth])
    np.testing.assert_array_equal(np.sort(v[..., :kth], axis=-1), np.sort(w[..., :kth], axis=-1))
    np.testing.assert_array_equal(np.sort(v[..., kth + 1:], axis=-1), np.sort(w[..., kth + 1:], axis=-1))
    pivot = v[..., kth:kth + 1]
    assert np.all(v[..., :kth] <= pivot) and np.all(v[..., kth + 1:] >= pivot)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "uint8"])
@pytest.mark.parametrize("shape,kth,axis", [((11,), 4, -1), ((5, 6), -1, 0), ((3, 7), 0, 1), ((2, 3, 4), -5, None)])
def test_partition_and_argpartition(rng, dtype, shape, kth, axis):
    x = tie_heavy(rng, shape, dtype)
    if dtype in FLOATS:
        x[np.isnan(x.astype(np.float32))] = 1.5  # NaN ordering is covered by sort; keep <= meaningful
    got, want = mx.partition(mx.array(x), kth, axis=axis), mlx_core.partition(mlx_core.array(x), kth, axis=axis)
    assert got.dtype == getattr(mx, dtype) and got.shape == want.shape
    n = x.size if axis is None else x.shape[axis]
    k = kth % n
    ax = 0 if axis is None else axis % x.ndim
    check_partition(to_numpy(got), k, ax, to_numpy(want))
    idx = mx.argpartition(mx.array(x), kth=kth, axis=axis)
    assert idx.dtype == mx.uint32 and idx.shape == want.shape
    flat = x.reshape(-1) if axis is None else x
    taken = np.take_along_axis(flat, to_numpy(idx).astype(np.int64), axis=ax)
    check_partition(taken, k, ax, to_numpy(want))
    assert np.all(np.sort(to_numpy(idx), axis=ax) == np.arange(n).reshape([-1] + [1] * (flat.ndim - 1 - ax)))
    if ON_CPU:  # MLX's exact arrangement, ties included
        same("partition", x, kth, axis=axis)
        same("argpartition", x, kth, axis=axis)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int64", "bool"])
@pytest.mark.parametrize("shape,k,axis", [((9,), 3, -1), ((6, 5), 0, 0), ((4, 5), 5, 1), ((2, 6), 4, None)])
def test_topk(rng, dtype, shape, k, axis):
    x = tie_heavy(rng, shape, dtype)
    got = mx.topk(mx.array(x) if dtype != "bfloat16" else mx.array(x.astype(np.float32)).astype(mx.bfloat16), k,
                  axis=axis)
    want = mlx_core.topk(mlx_core.array(x) if dtype != "bfloat16"
                         else mlx_core.array(x.astype(np.float32)).astype(mlx_core.bfloat16), k, axis=axis)
    assert got.shape == want.shape and str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    ax = 0 if axis is None else axis
    g, w = to_numpy(got).astype(np.float64), to_numpy(want).astype(np.float64)
    # NaNs count as the largest: they sort to the end in numpy too.
    np.testing.assert_array_equal(np.sort(g, axis=ax), np.sort(w, axis=ax))
    if ON_CPU:
        np.testing.assert_array_equal(g, w)


def test_partition_topk_errors_and_edges():
    x = np.arange(6, dtype=np.float32)
    for kth in (6, -7):
        same_error("partition", x, kth)
        same_error("argpartition", x, kth)
    for k in (7, -1):
        same_error("topk", x, k)
    same_error("partition", np.zeros(0, np.float32), 0)
    same_error("topk", np.array(3.0, np.float32), 1)
    same_error("partition", np.zeros((2, 3), np.float32), 1, axis=2)
    same("topk", x, 0)
    same("topk", np.array(3.0, np.float32), 1, axis=None)
    same("partition", np.array(3, np.int32), 0, axis=None)


# ---- median

@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "int32", "uint8", "bool", "complex64"])
@pytest.mark.parametrize("shape,axis,keepdims", [((7,), None, False), ((4, 6), 1, False), ((4, 6), 0, True),
                                                  ((2, 3, 4), [0, 2], False), ((2, 3, 4), (-1, 0), True)])
def test_median(rng, dtype, shape, axis, keepdims):
    x = random_array(rng, shape, dtype)
    same("median", x, axis=axis, keepdims=keepdims)


def test_median_nan_and_overflow():
    x = np.array([[1.0, np.nan, 2.0], [3.0, 1.0, 2.0], [np.nan, np.nan, 0.0]], np.float32)
    same("median", x, axis=1)
    same("median", x, axis=0, keepdims=True)
    same("median", np.array([60000, 65000], np.float16))
    same("median", np.array([60000, 65000, 1], np.float16))
    same("median", np.array(5, np.int32))


def test_median_errors():
    x = np.zeros((2, 3, 4), np.float32)
    same_error("median", x, axis=[0, 0])
    same_error("median", x, axis=3)
    same_error("median", x, axis=())
    same_error("median", np.zeros((2, 0), np.float32), axis=1)
    same_error("median", np.zeros(0, np.float32))


# ---- searchsorted

@pytest.mark.parametrize("seq_dtype,val_dtype", [("float32", "float32"), ("int32", "float32"), ("uint8", "int32"),
                                                 ("float16", "float16"), ("bool", "bool"), ("int64", "int64")])
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted(rng, seq_dtype, val_dtype, side):
    seq = np.sort(random_array(rng, (12,), seq_dtype, low=-0.5, high=0.5))
    vals = random_array(rng, (3, 5), val_dtype, low=-0.7, high=0.7)
    same("searchsorted", seq, vals, side=side)
    same("searchsorted", seq, np.asarray(vals[0, 0]), side)
    same("searchsorted", seq, vals.T)


def test_searchsorted_nan_zeros_empty():
    seq = np.array([-np.inf, -1.0, 0.0, 0.0, 2.0, np.inf, np.nan, np.nan], np.float32)
    vals = np.array([np.nan, -0.0, 0.0, 2.0, np.inf, -np.inf, 5.0], np.float32)
    for side in ("left", "right"):
        same("searchsorted", seq, vals, side=side)
        same("searchsorted", np.zeros(0, np.float32), vals, side=side)
        same("searchsorted", seq, np.zeros((2, 0), np.float32), side=side)


def test_searchsorted_errors():
    same_error("searchsorted", np.zeros((2, 2), np.float32), np.zeros(2, np.float32))
    same_error("searchsorted", np.array(1.0, np.float32), np.zeros(2, np.float32))
    same_error("searchsorted", np.zeros(2, np.float32), np.zeros(2, np.float32), side="middle")
    same_error("searchsorted", np.zeros(2, np.float32), 1.0)


# ---- unique

@pytest.mark.parametrize("dtype", ["int32", "float32", "uint8", "bool", "float16"])
@pytest.mark.parametrize("size", [0, 2, 6, 20])
def test_unique(rng, dtype, size):
    x = random_array(rng, (3, 5), dtype, low=-0.4, high=0.4)
    same("unique", x, size)
    same("unique", x, size, True, True, True)
    if size:
        same("unique", x, size=size, return_inverse=True, fill_value=0)
        same("unique", x.T, size, return_index=True, return_counts=True, fill_value=np.array(1).astype(dtype))


def test_unique_nans_zeros_scalars():
    x = np.array([np.nan, 1.0, -0.0, np.nan, 0.0, 1.0], np.float32)
    got, want = same("unique", x, 6, True, True, True)
    np.testing.assert_array_equal(np.signbit(to_numpy(got[0])), np.signbit(to_numpy(want[0])))
    same("unique", np.array(5, np.int32), 3, True, True, True)
    same("unique", np.zeros(0, np.float32), 3, True, True, True, fill_value=2)
    same("unique", np.zeros(0, np.float32), 0, True, True, True)
    same("unique", np.array([1, 2], np.int32), 3, fill_value=2.5)


def test_unique_errors():
    same_error("unique", np.array([1, 2], np.int32), -1)
    same_error("unique", np.zeros(0, np.float32), 3)
    same_error("unique", np.array([1, 2], np.int32), 3, fill_value=np.array([1, 2], np.int32))


# ---- random.permutation

def test_permutation_matches_mlx_for_a_key():
    for n in (0, 1, 10, 300):
        same(lambda m: m.random.permutation(n, key=m.random.key(7)))
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    same(lambda m, a: m.random.permutation(a, 1, m.random.key(3)), x)
    same(lambda m, a: m.random.permutation(a, axis=-1, key=m.random.key(11)), x)
    same(lambda m, a: m.random.permutation(a, key=m.random.key(5)), x)


def test_permutation_is_a_permutation_and_errors():
    p = to_numpy(mx.random.permutation(50))
    assert sorted(p.tolist()) == list(range(50))
    same_error(lambda m: m.random.permutation(-1, key=m.random.key(0)))
    same_error(lambda m, a: m.random.permutation(a, 2, m.random.key(0)), np.arange(4, dtype=np.int32))
    same_error(lambda m, a: m.random.permutation(a, key=m.random.key(0)), np.array(3.0, np.float32))


# ---- gradients

def test_gradients_match_mlx(rng):
    x = rng.permutation(24).astype(np.float32).reshape(4, 6) / 3  # distinct: each gradient well defined
    w = random_array(rng, (4, 6), "float32")
    same(lambda m, a, b: m.grad(lambda t: m.sum(m.sort(t, axis=0) * b))(a), x, w)
    same(lambda m, a, b: m.grad(lambda t: m.sum(m.sort(t, axis=None) * b.reshape(-1)))(a), x, w)
    same(lambda m, a: m.grad(lambda t: m.sum(m.topk(t, 3) ** 2))(a), x)
    same(lambda m, a: m.grad(lambda t: m.sum(m.partition(t, 2, axis=0)[2]))(a), x)
    if ON_CPU:  # same arrangement as MLX: every output position's gradient matches
        same(lambda m, a, b: m.grad(lambda t: m.sum(m.partition(t, 3, axis=1) * b))(a), x, w)
        same(lambda m, a, b: m.grad(lambda t: m.sum(m.topk(t, 4) * b[:, :4]))(a), x, w)
    # Ties: each output's cotangent lands on an input of the same value.
    tied = np.array([[2.0, 1.0, 2.0, 1.0, 3.0, 2.0]], np.float32)
    wt = random_array(rng, (1, 6), "float32")
    y = mx.partition(mx.array(tied), 2)
    g = mx.grad(lambda t: mx.sum(mx.partition(t, 2) * mx.array(wt)))(mx.array(tied))
    for value in (1.0, 2.0, 3.0):
        np.testing.assert_allclose(to_numpy(g)[tied == value].sum(), wt[to_numpy(y) == value].sum(), rtol=1e-6)
    same(lambda m, a: m.grad(lambda t: m.sum(m.median(t, axis=1)))(a), x)
    same(lambda m, a: m.grad(lambda t: m.median(t))(a), x)
    same(lambda m, a: m.grad(lambda t: m.sum(m.argsort(t).astype(m.float32) * t))(a), x)
    # Forward mode: the tangent follows the sorting permutation.
    same(lambda m, a, b: m.jvp(lambda t: m.sort(t, axis=1), [a], [b])[1][0], x, w)
    same(lambda m, a, b: m.jvp(lambda t: m.median(t, axis=1), [a], [b])[1][0], x, w)
    if ON_CPU:
        same(lambda m, a, b: m.jvp(lambda t: m.partition(t, 2, axis=1), [a], [b])[1][0], x, w)
        same(lambda m, a, b: m.jvp(lambda t: m.topk(t, 2, axis=0), [a], [b])[1][0], x, w)
    # Indices carry no derivative.
    same(lambda m, a: m.vjp(lambda t: m.argsort(t), [a], [m.ones(a.shape, m.uint32)])[1][0], x)


def test_stream_keyword(rng):
    x = random_array(rng, (3, 4), "float32")
    same(lambda m, a: m.sort(a, axis=0, stream=m.cpu), x)
    same(lambda m, a: m.median(a, 1, True, stream=m.cpu), x)
