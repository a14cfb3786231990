"""Softmax and logsumexp over trailing axes as single nodes (primitives/
softmax.h): every kernel form the GPU launch picks (rows in registers of a
warp or a block of 256 or 1024 threads, the looping and the split kernels
for longer softmax rows, the streamed logsumexp, split or not) on every
float dtype, strided inputs, infinities and NaN, derivatives (grad, jvp,
vmap), export, and real MLX as the oracle. References are numpy float64 on fresh random inputs."""
import numpy as np
import pytest

import alloy.core as mx
from mlx_oracle import same
from test_elementwise import FLOATS, check_close, random_values, to_mx, wide

# Row lengths on both sides of each kernel's limit (32 * K per warp, 1024 * K
# per block, K <= 32; longer rows loop).
LENGTHS = [1, 31, 32, 33, 100, 1024, 1025, 5000, 32768, 32769, 70001]


def softmax_ref(X, axis=-1):
    e = np.exp(X - X.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def lse_ref(X, axis=-1, keepdims=False):
    m = X.max(axis=axis, keepdims=True)
    out = np.log(np.exp(X - m).sum(axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def rows_for(n):
    """Enough rows to cover several blocks of the grid, at a bounded size."""
    return max(1, min(37, 400000 // n))


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_every_kernel_form_matches_float64(rng, dtype, n):
    x = random_values(rng, (rows_for(n), n), dtype, -30, 30)
    X = wide(x)
    a = to_mx(x)
    sm = mx.softmax(a, axis=-1)
    assert sm.dtype == a.dtype and sm.shape == a.shape
    check_close(sm, softmax_ref(X), dtype, scale=4)
    lse = mx.logsumexp(a, axis=-1)
    assert lse.dtype == a.dtype and lse.shape == (x.shape[0],)
    check_close(lse, lse_ref(X), dtype, scale=4)
    # Rows sum to one (up to rounding of n terms).
    total = np.asarray(mx.sum(mx.softmax(a.astype(mx.float32), axis=-1), axis=-1))
    np.testing.assert_allclose(total, 1.0, rtol=1e-4 * max(1.0, np.log2(n)))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_trailing_axes_and_strided_inputs(rng, dtype):
    x = random_values(rng, (3, 4, 5, 6), dtype, -5, 5)
    X = wide(x)
    a = to_mx(x)
    check_close(mx.softmax(a, axis=(2, 3)), softmax_ref(X.reshape(3, 4, 30)).reshape(X.shape), dtype, scale=4)
    check_close(mx.softmax(a), softmax_ref(X.reshape(-1)).reshape(X.shape), dtype, scale=4)
    check_close(mx.logsumexp(a, axis=(-2, -1), keepdims=True), lse_ref(X.reshape(3, 4, 30))[:, :, None, None],
                dtype, scale=4)
    check_close(mx.logsumexp(a), lse_ref(X.reshape(-1), axis=0), dtype, scale=4)
    # A transposed view and a broadcast are read through their strides.
    t = mx.transpose(a, (0, 1, 3, 2))
    check_close(mx.softmax(t, axis=-1), softmax_ref(X.transpose(0, 1, 3, 2)), dtype, scale=4)
    row = to_mx(x[0, 0, 0])
    b = mx.broadcast_to(row, (7, 6))
    check_close(mx.logsumexp(b, axis=-1), np.broadcast_to(lse_ref(X[0, 0, 0], axis=0), (7,)), dtype, scale=4)
    # A leading axis still takes the composite graph, with the same values.
    check_close(mx.softmax(a, axis=0), softmax_ref(X, axis=0), dtype, scale=4)


@pytest.mark.parametrize("n", [8, 3000, 40000])
def test_infinities_and_nan(n):
    x = np.zeros((4, n), np.float32)
    x[0, :] = -np.inf  # every element -inf: softmax NaN, logsumexp -inf
    x[1, 3] = np.inf  # one +inf: softmax NaN (inf - inf), logsumexp +inf
    x[2, 5] = np.nan  # NaN wins
    x[3, :] = np.linspace(-1, 1, n, dtype=np.float32)
    sm = np.asarray(mx.softmax(mx.array(x), axis=-1))
    lse = np.asarray(mx.logsumexp(mx.array(x), axis=-1))
    assert np.isnan(sm[0]).all() and np.isnan(sm[1]).all() and np.isnan(sm[2]).all()
    assert lse[0] == -np.inf and lse[1] == np.inf and np.isnan(lse[2])
    np.testing.assert_allclose(sm[3], softmax_ref(x[3].astype(np.float64)), rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(lse[3], lse_ref(x[3].astype(np.float64), axis=0), rtol=1e-6)


def test_gradients_match_float64(rng):
    x = random_values(rng, (5, 70), "float64", -3, 3)
    w = random_values(rng, (5, 70), "float64", -1, 1)
    a, wm = to_mx(x), to_mx(w)
    g = np.asarray(mx.grad(lambda v: mx.sum(mx.softmax(v, axis=-1) * wm))(a))
    s = softmax_ref(x)
    np.testing.assert_allclose(g, s * (w - (w * s).sum(-1, keepdims=True)), rtol=1e-10, atol=1e-12)
    g = np.asarray(mx.grad(lambda v: mx.sum(mx.logsumexp(v, axis=-1) * wm[:, 0]))(a))
    np.testing.assert_allclose(g, s * w[:, :1], rtol=1e-10, atol=1e-12)
    # Forward mode agrees with the finite difference of the exact function.
    t = random_values(rng, (5, 70), "float64", -1, 1)
    _, (jv,) = mx.jvp(lambda v: mx.softmax(v, axis=-1), [a], [to_mx(t)])
    eps = 1e-6
    fd = (softmax_ref(x + eps * t) - softmax_ref(x - eps * t)) / (2 * eps)
    np.testing.assert_allclose(np.asarray(jv), fd, rtol=1e-6, atol=1e-9)
    _, (jl,) = mx.jvp(lambda v: mx.logsumexp(v, axis=-1, keepdims=True), [a], [to_mx(t)])
    fd = (lse_ref(x + eps * t, keepdims=True) - lse_ref(x - eps * t, keepdims=True)) / (2 * eps)
    np.testing.assert_allclose(np.asarray(jl), fd, rtol=1e-6, atol=1e-9)


def test_vmap_and_compile(rng):
    x = random_values(rng, (3, 4, 50), "float32", -4, 4)
    a = to_mx(x)
    out = mx.vmap(lambda v: mx.softmax(v, axis=-1), in_axes=1)(a)
    check_close(out, softmax_ref(wide(x)).transpose(1, 0, 2), "float32", scale=4)
    out = mx.compile(lambda v: mx.logsumexp(v * 2, axis=-1))(a)
    check_close(out, lse_ref(wide(x) * 2), "float32", scale=4)


def test_export_round_trip(rng, tmp_path):
    x = random_values(rng, (6, 40), "float32", -4, 4)
    a = to_mx(x)
    path = str(tmp_path / "f.mlxfn")
    mx.export_function(path, lambda v: (mx.softmax(v, axis=-1), mx.logsumexp(v, axis=-1)), a)
    sm, lse = mx.import_function(path)(a)
    check_close(sm, softmax_ref(wide(x)), "float32", scale=4)
    check_close(lse, lse_ref(wide(x)), "float32", scale=4)


@pytest.mark.parametrize("n", [33, 2000, 40000])
def test_same_as_real_mlx(rng, n):
    x = random_values(rng, (3, n), "float32", -10, 10)
    same(lambda m, v: m.softmax(v, axis=-1), x)
    same(lambda m, v: m.softmax(v, axis=-1, precise=True), x.astype(np.float16))
    same(lambda m, v: m.logsumexp(v, axis=-1, keepdims=True), x)
    same(lambda m, v: m.logsumexp(v), x)


@pytest.mark.parametrize("shape", [(300, 33000), (3, 100000), (1, 3000000)], ids=str)
def test_long_rows_loop_and_split(rng, shape):
    # Many long rows loop in one block each; few long rows split over blocks.
    x = random_values(rng, shape, "float32", -20, 20)
    X = wide(x)
    a = to_mx(x)
    check_close(mx.softmax(a, axis=-1), softmax_ref(X), "float32", scale=8)
    check_close(mx.logsumexp(a, axis=-1), lse_ref(X), "float32", scale=8)
    check_close(mx.logsumexp(a), lse_ref(X.reshape(-1), axis=0), "float32", scale=8)


@pytest.mark.parametrize("dtype,shape", [("float32", (700, 8192)), ("float32", (400, 12288)),
                                         ("float32", (300, 32768)), ("float16", (600, 16384)),
                                         ("bfloat16", (300, 32768))], ids=str)
def test_staged_long_rows(rng, dtype, shape):
    # Rows of 32 KB and more in whole 16-byte chunks: on the GPU each block
    # loops over more rows than blocks fit on the device, staging the next
    # row in shared memory while it writes this one (softmax_staged). The
    # same rows read from one element in (not 16-byte aligned) take the
    # unstaged kernel; both agree with float64.
    rows, n = shape
    x = random_values(rng, (rows, n + 1), dtype, -20, 20)
    X = wide(x)
    a = to_mx(x)
    aligned = mx.contiguous(a[:, :n])
    check_close(mx.softmax(aligned, axis=-1), softmax_ref(X[:, :n]), dtype, scale=8)
    flat = mx.reshape(a, (-1,))[1:1 + rows * n]
    offset = mx.reshape(flat, (rows, n))
    check_close(mx.softmax(offset, axis=-1), softmax_ref(X.reshape(-1)[1:1 + rows * n].reshape(rows, n)), dtype,
                scale=8)
