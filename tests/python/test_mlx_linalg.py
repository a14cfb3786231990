"""mx.linalg, mx.matrix_norm and mx.random.multivariate_normal against real
MLX (values, shapes, dtypes, exception types) and numpy in float64
(reconstructions). Where LAPACK leaves a choice open (signs of singular and
eigen vectors, the order of a general eigenproblem's values) the tests check
the defining property instead of MLX's particular choice.
"""
import numpy as np
import pytest

import alloy.core as mx
from mlx_oracle import random_array, same, same_error, to_numpy

# Two LAPACK builds factoring the same float32 matrix agree to rounding.
TOL = {"float32": dict(rtol=2e-4, atol=2e-5), "float64": dict(rtol=1e-10, atol=1e-10)}
RECON = {"float32": 2e-4, "float64": 1e-10}


def call(name, dtype, **kwargs):
    """`name` in either framework, its array arguments cast to `dtype` first
    (both frameworks read float64 numpy arrays as float32)."""
    def f(m, *args):
        fn = m
        for part in name.split("."):
            fn = getattr(fn, part)
        return fn(*[a.astype(getattr(m, dtype)) for a in args], **kwargs)
    f.__name__ = name
    return f


def arr(x):
    """An Alloy array of x's dtype (float64 kept)."""
    return mx.array(x).astype(mx.float64) if x.dtype == np.float64 else mx.array(x)


def rand(rng, shape, dtype="float32"):
    """random_array whose float64 values are float32-exact, so the cast
    inside `call` loses nothing and numpy sees the same matrix."""
    x = random_array(rng, shape, "float32" if dtype == "float64" else dtype)
    return x.astype(dtype)


def general(rng, shape, dtype="float32"):
    """Random matrices with a strong diagonal: well conditioned, still general."""
    x = rng.uniform(-1, 1, shape)
    n = shape[-1]
    if len(shape) >= 2 and shape[-2] == n and n:
        x = x + n * np.eye(n)
    return x.astype(np.float32).astype(dtype)


def shuffled_general(rng, shape, dtype="float32"):
    """general() with its rows shuffled: still well conditioned, but the
    pivots move and the determinant's sign varies."""
    x = general(rng, shape, dtype)
    return x[..., rng.permutation(shape[-2]), :]


def rect_general(rng, shape, dtype="float32"):
    """Rectangular matrices with a strong leading diagonal (full rank, well conditioned)."""
    m, n = shape[-2:]
    x = rng.uniform(-1, 1, shape) + max(m, n) * np.eye(m, n)
    return x[..., rng.permutation(m), :].astype(np.float32).astype(dtype)


def spd(rng, shape, dtype="float32"):
    x = rng.uniform(-1, 1, shape)
    n = shape[-1]
    return (x @ np.swapaxes(x, -1, -2) + n * np.eye(n)).astype(np.float32).astype(dtype)


def npy(a):
    return to_numpy(a).astype(np.complex128 if np.iscomplexobj(to_numpy(a)) else np.float64)


def T(x):
    return np.swapaxes(x, -1, -2)


SQUARE_SHAPES = [(4, 4), (2, 3, 5, 5), (1, 1)]
DTYPES = ["float32", "float64"]


@pytest.mark.parametrize("shape", SQUARE_SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(rng, shape, dtype, upper):
    x = spd(rng, shape, dtype)
    got, _ = same(call("linalg.cholesky", dtype, upper=upper), x, **TOL[dtype])
    f = npy(got)
    recon = T(f) @ f if upper else f @ T(f)
    np.testing.assert_allclose(recon, x.astype(np.float64), atol=RECON[dtype] * max(1, shape[-1]) * 10)
    loose = dict(rtol=1e-3, atol=1e-5) if dtype == "float32" else dict(rtol=1e-9, atol=1e-5)
    same(call("linalg.cholesky_inv", dtype, upper=upper), f.astype(dtype), **loose)


@pytest.mark.parametrize("shape", SQUARE_SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_inv_and_tri_inv(rng, shape, dtype):
    x = general(rng, shape, dtype)
    got, _ = same(call("linalg.inv", dtype), x, **TOL[dtype])
    n = shape[-1]
    eye = np.broadcast_to(np.eye(n), shape)
    np.testing.assert_allclose(x.astype(np.float64) @ npy(got), eye, atol=RECON[dtype] * 10)
    # Non-contiguous input: the transpose's inverse.
    same(lambda m, a: m.linalg.inv(m.swapaxes(a.astype(getattr(m, dtype)), -1, -2)), x, **TOL[dtype])
    for upper in (False, True):
        got, _ = same(call("linalg.tri_inv", dtype, upper=upper), x, **TOL[dtype])
        tri = np.triu(x) if upper else np.tril(x)
        np.testing.assert_allclose(tri.astype(np.float64) @ npy(got), np.broadcast_to(np.eye(n), shape),
                                   atol=RECON[dtype] * 10)


# MLX 0.32.4 dies of SIGFPE on some empty matrices, so empty inputs are
# checked against the shapes and values numpy gives, without the oracle.
def test_empty_matrices():
    e = mx.zeros((2, 0, 0))
    for f in (mx.linalg.cholesky, mx.linalg.inv, mx.linalg.tri_inv, mx.linalg.pinv):
        assert f(e).shape == (2, 0, 0)
    np.testing.assert_array_equal(to_numpy(mx.linalg.det(e)), [1, 1])
    sign, logdet = mx.linalg.slogdet(e)
    np.testing.assert_array_equal(to_numpy(sign), [1, 1])
    np.testing.assert_array_equal(to_numpy(logdet), [0, 0])
    w, v = mx.linalg.eigh(e)
    assert w.shape == (2, 0) and v.shape == (2, 0, 0)
    w, v = mx.linalg.eig(e)
    assert w.shape == (2, 0) and v.shape == (2, 0, 0) and w.dtype == mx.complex64
    p, l, u = mx.linalg.lu(mx.zeros((3, 0)))
    assert p.shape == (3,) and l.shape == (3, 0) and u.shape == (0, 0)
    np.testing.assert_array_equal(to_numpy(p), [0, 1, 2])
    u, s, vt = mx.linalg.svd(mx.zeros((0, 3)))
    assert u.shape == (0, 0) and s.shape == (0,)
    np.testing.assert_array_equal(to_numpy(vt), np.eye(3))
    q, r = mx.linalg.qr(mx.zeros((3, 0)))
    assert q.shape == (3, 0) and r.shape == (0, 0)
    assert mx.linalg.pinv(mx.zeros((0, 3))).shape == (3, 0)


def test_inv_singular_raises_like_mlx():
    same_error("linalg.inv", np.zeros((3, 3), np.float32))
    same_error("linalg.tri_inv", np.array([[0.0, 5.0], [2.0, 4.0]], np.float32))


@pytest.mark.parametrize("shape", [(5, 5), (6, 4), (3, 5), (2, 4, 4)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_lu(rng, shape, dtype):
    x = rand(rng, shape, dtype)
    same(call("linalg.lu_factor", dtype), x, **TOL[dtype])
    got, _ = same(call("linalg.lu", dtype), x, **TOL[dtype])
    p, l, u = (to_numpy(g) for g in got)
    recon = l.astype(np.float64) @ u
    np.testing.assert_allclose(np.take_along_axis(recon, p[..., None].astype(np.int64), axis=-2), x,
                               atol=RECON[dtype] * 10)


@pytest.mark.parametrize("shape", [(5, 5), (6, 4), (3, 5), (2, 3, 4, 4)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_qr(rng, shape, dtype):
    x = rand(rng, shape, dtype)
    got, _ = same(call("linalg.qr", dtype), x, **TOL[dtype])
    q, r = npy(got[0]), npy(got[1])
    np.testing.assert_allclose(q @ r, x, atol=RECON[dtype] * 10)
    k = min(shape[-2:])
    np.testing.assert_allclose(T(q) @ q, np.broadcast_to(np.eye(k), q.shape[:-2] + (k, k)), atol=RECON[dtype] * 10)


@pytest.mark.parametrize("shape", [(5, 5), (6, 4), (3, 5), (2, 3, 4, 4)])
@pytest.mark.parametrize("dtype", DTYPES + ["complex64"])
def test_svd(rng, shape, dtype):
    x = rand(rng, shape, dtype)
    same(call("linalg.svd", dtype, compute_uv=False), x, **TOL.get(dtype, TOL["float32"]))
    # U and Vt are unique only up to signs/phases: check shapes, dtypes and
    # the factorization, with MLX's S.
    same(lambda m, a: m.linalg.svd(a.astype(getattr(m, dtype)))[1], x, **TOL.get(dtype, TOL["float32"]))
    u, s, vt = mx.linalg.svd(arr(x))
    import mlx.core as mlx_core
    mu, _, mvt = mlx_core.linalg.svd(mlx_core.array(x).astype(getattr(mlx_core, dtype)), stream=mlx_core.cpu)
    assert u.shape == tuple(mu.shape) and vt.shape == tuple(mvt.shape)
    assert str(u.dtype).split(".")[-1] == str(mu.dtype).split(".")[-1]
    k = min(shape[-2:])
    u, s, vt = npy(u), npy(s), npy(vt)
    tol = RECON.get(dtype, 2e-4) * 10
    np.testing.assert_allclose(u[..., :, :k] @ (s[..., :, None] * vt[..., :k, :]), x, atol=tol)
    m, n = shape[-2:]
    np.testing.assert_allclose(T(u).conj() @ u, np.broadcast_to(np.eye(m), u.shape), atol=tol)
    np.testing.assert_allclose(vt @ T(vt).conj(), np.broadcast_to(np.eye(n), vt.shape), atol=tol)


@pytest.mark.parametrize("shape", [(5, 5), (2, 3, 4, 4)])
@pytest.mark.parametrize("dtype", DTYPES + ["complex64"])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(rng, shape, dtype, uplo):
    x = rand(rng, shape, dtype)
    h = ((x + T(x).conj()) / 2).astype(np.complex64 if dtype == "complex64" else np.float32).astype(dtype)
    # Garbage in the triangle that UPLO says not to read.
    n = shape[-1]
    mask = np.triu(np.ones((n, n), bool), 1) if uplo == "L" else np.tril(np.ones((n, n), bool), -1)
    fed = np.where(mask, np.asarray(100, h.dtype), h).astype(dtype)
    tol = TOL.get(dtype, TOL["float32"])
    same(call("linalg.eigvalsh", dtype, UPLO=uplo), fed, **tol)
    same(lambda m, a: m.linalg.eigh(a.astype(getattr(m, dtype)), UPLO=uplo)[0], fed, **tol)
    w, v = (npy(g) for g in mx.linalg.eigh(arr(fed), UPLO=uplo))
    np.testing.assert_allclose(h @ v, v * w[..., None, :], atol=RECON.get(dtype, 2e-4) * 10 * max(n, 1))


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (1, 1)])
@pytest.mark.parametrize("dtype", DTYPES + ["complex64"])
def test_eig(rng, shape, dtype):
    import mlx.core as mlx_core
    x = random_array(rng, shape, dtype)
    w, v = mx.linalg.eig(arr(x))
    mw, mv = mlx_core.linalg.eig(mlx_core.array(x).astype(getattr(mlx_core, dtype)), stream=mlx_core.cpu)
    for g, m in ((w, mw), (v, mv)):
        assert g.shape == tuple(m.shape) and str(g.dtype).split(".")[-1] == str(m.dtype).split(".")[-1]
    w, v = npy(w), npy(v)
    np.testing.assert_allclose(x @ v, v * w[..., None, :], atol=1e-4 * max(shape[-1], 1) * 4)
    # Same multiset of values as numpy (LAPACK's order differs between routines).
    want = np.linalg.eigvals(x.astype(np.complex128)) if x.size else np.zeros(shape[:-1])
    for a, b in ((w, want), (want, w)):
        dist = np.abs(a[..., :, None] - b[..., None, :]).min(axis=-1) if a.size else np.zeros(1)
        assert dist.max() < 1e-3
    got = npy(mx.linalg.eigvals(arr(x)))
    np.testing.assert_allclose(got, w, atol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES)
def test_eig_of_a_real_matrix_is_real_lapacks(rng, dtype):
    # The real geev, as MLX and numpy use for real input: real eigenvalues
    # with imaginary part exactly 0, complex ones in exactly conjugate pairs
    # (their vectors too). A rotation block forces a pair.
    x = random_array(rng, (3, 6, 6), dtype)
    x[..., :2, :2] = [[0.5, -2.0], [2.0, 0.5]]
    w, v = (npy(a) for a in mx.linalg.eig(arr(x)))
    for b in range(x.shape[0]):
        real = np.abs(w[b].imag) < 1e-3
        assert np.all(w[b][real].imag == 0), w[b]
        pairs = np.flatnonzero(~real)
        assert len(pairs) >= 2
        for j in pairs[::2]:
            assert w[b][j + 1] == np.conj(w[b][j]), w[b]
            np.testing.assert_array_equal(v[b][:, j + 1], np.conj(v[b][:, j]))
    np.testing.assert_allclose(x @ v, v * w[..., None, :], atol=1e-4 * 6 * 4)


@pytest.mark.parametrize("n", [1, 2, 3, 5])
@pytest.mark.parametrize("dtype", DTYPES)
def test_det_slogdet(rng, n, dtype):
    x = shuffled_general(rng, (2, n, n), dtype)
    # MLX's float64 results for n >= 4 carry float32 rounding (its LU path),
    # so float64 is held to numpy's float64 values instead.
    tol = dict(rtol=1e-3, atol=1e-5) if dtype == "float32" or n >= 4 else TOL[dtype]
    got, _ = same(call("linalg.det", dtype), x, **tol)
    np.testing.assert_allclose(npy(got), np.linalg.det(x.astype(np.float64)), rtol=RECON[dtype])
    got, _ = same(call("linalg.slogdet", dtype), x, **tol)
    sign, logdet = np.linalg.slogdet(x.astype(np.float64))
    np.testing.assert_array_equal(npy(got[0]), sign)
    np.testing.assert_allclose(npy(got[1]), logdet, rtol=RECON[dtype], atol=RECON[dtype])


def test_det_slogdet_special(rng):
    same("linalg.det", random_array(rng, (3, 3), "int32"), rtol=1e-5)
    same("linalg.slogdet", random_array(rng, (2, 2), "float16"))
    same("linalg.det", random_array(rng, (3, 3), "float16"), rtol=2e-2, atol=2e-2)
    singular = np.array([[1, 2, 3, 4], [2, 4, 6, 8], [0, 1, 0, 1], [1, 0, 1, 0]], np.float32)
    same("linalg.slogdet", singular)
    same("linalg.det", singular)


@pytest.mark.parametrize("n", [2, 3])
def test_det_grad(rng, n):
    x = random_array(rng, (n, n), "float32")
    same(lambda m, a: m.grad(m.linalg.det)(a), x, rtol=1e-4, atol=1e-5)
    same(lambda m, a: m.grad(lambda y: m.linalg.slogdet(y)[1])(a), x, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("bshape", [(4,), (4, 2), (3, 4, 2)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_solve(rng, bshape, dtype):
    a = general(rng, (3, 4, 4) if len(bshape) == 3 else (4, 4), dtype)
    b = rand(rng, bshape, dtype)
    same(call("linalg.solve", dtype), a, b, **TOL[dtype])
    for upper in (False, True):
        same(call("linalg.solve_triangular", dtype, upper=upper), a, b, **TOL[dtype])
    x = npy(mx.linalg.solve(arr(a), arr(b)))
    np.testing.assert_allclose(a.astype(np.float64) @ x if len(bshape) > 1 else a @ x, b, atol=RECON[dtype] * 10)


def test_solve_dtypes(rng):
    a, b = general(rng, (3, 3), "float64"), random_array(rng, (3,), "float32")
    same(lambda m, p, q: m.linalg.solve(p.astype(m.float64), q), a, b, **TOL["float64"])
    # Batched b against a single a: Alloy broadcasts (MLX 0.32.4 fails in take_along_axis).
    a, b = general(rng, (3, 3)), random_array(rng, (5, 3, 2))
    got = npy(mx.linalg.solve(mx.array(a), mx.array(b)))
    np.testing.assert_allclose(a.astype(np.float64) @ got, b, atol=1e-4)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (2, 3, 6)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_pinv(rng, shape, dtype):
    x = rect_general(rng, shape, dtype)
    loose = dict(rtol=1e-3, atol=1e-4) if dtype == "float32" else dict(rtol=1e-9, atol=1e-9)
    got, _ = same(call("linalg.pinv", dtype), x, **loose)
    np.testing.assert_allclose(npy(got), np.linalg.pinv(x.astype(np.float64)), atol=RECON[dtype] * 100)


def test_pinv_rank_deficient():
    x = np.array([[1.0, 2.0], [2.0, 4.0]], np.float32)
    same("linalg.pinv", x, rtol=1e-4, atol=1e-5)


NORM_CASES = [
    ((6,), None, None), ((6,), 1, None), ((6,), 3, None), ((6,), 0, None), ((6,), float("inf"), None),
    ((6,), -float("inf"), None), ((6,), -1, None), ((3, 4), None, None), ((3, 4), "fro", None),
    ((3, 4), "nuc", None), ((3, 4), 1, None), ((3, 4), -1, None), ((3, 4), float("inf"), None),
    ((3, 4), -float("inf"), None), ((3, 4), 2, None), ((3, 4), -2, None), ((2, 3, 4), None, None),
    ((2, 3, 4), None, 1), ((2, 3, 4), 1, (2, 0)), ((2, 3, 4), "nuc", (0, 2)), ((2, 3, 4), 2, [1, 2]),
    ((2, 3, 4), float("inf"), (-1, -2)),
]


@pytest.mark.parametrize("shape,ord,axis", NORM_CASES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_norm(rng, shape, ord, axis, keepdims):
    x = random_array(rng, shape, "float32")
    same("linalg.norm", x, ord, axis, keepdims, rtol=1e-4, atol=1e-5)
    same(lambda m, a: m.matrix_norm(m.swapaxes(a, 0, -1), ord=ord, axis=axis, keepdims=keepdims), x,
         rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", ["int32", "float16", "complex64", "bool", "float64"])
def test_norm_dtypes(rng, dtype):
    x = random_array(rng, (3, 4), dtype)
    same("linalg.norm", x)
    same("linalg.norm", x, ord=1, axis=0)
    same("linalg.norm", x, ord=0, axis=1)


@pytest.mark.parametrize("ord", [np.int64(3), np.float32(1.0), True, np.inf])
def test_norm_ord_scalar_types(rng, ord):
    same("linalg.norm", random_array(rng, (5,), "float32"), ord)
    same_error("linalg.norm", random_array(rng, (5,), "float32"), [1])


def test_norm_grad(rng):
    x = random_array(rng, (3, 4), "float32")
    same(lambda m, a: m.grad(lambda y: m.linalg.norm(y))(a), x, rtol=1e-4, atol=1e-6)
    same(lambda m, a: m.grad(lambda y: m.linalg.norm(y, ord=3, axis=1).sum())(a), x, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("sa,sb,axis", [((3,), (3,), -1), ((4, 3), (4, 3), -1), ((3, 5), (3, 5), 0),
                                        ((2, 3), (4, 1, 3), -1), ((3,), (2,), -1), ((2,), (2,), 0)])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_cross(rng, sa, sb, axis, dtype):
    same("linalg.cross", random_array(rng, sa, dtype), random_array(rng, sb, dtype), axis=axis)


@pytest.mark.parametrize("mshape,cshape,shape", [((3,), (3, 3), ()), ((3,), (3, 3), (4, 2)),
                                                 ((2, 3), (3, 3), ()), ((1, 2), (4, 2, 2), (4,))])
def test_multivariate_normal(rng, mshape, cshape, shape):
    mean = random_array(rng, mshape, "float32")
    cov = spd(rng, cshape)
    seed = int(rng.integers(0, 2**31))
    same(lambda m, a, c: m.random.multivariate_normal(a, c, shape=list(shape), key=m.random.key(seed)), mean, cov,
         rtol=1e-4, atol=1e-4)


def test_multivariate_normal_statistics():
    cov = np.array([[2.0, 0.8], [0.8, 1.0]], np.float32)
    x = to_numpy(mx.random.multivariate_normal(mx.array([1.0, -1.0]), mx.array(cov), shape=[20000],
                                               key=mx.random.key(3)))
    np.testing.assert_allclose(x.mean(0), [1.0, -1.0], atol=0.05)
    np.testing.assert_allclose(np.cov(x.T), cov, atol=0.08)


ERRORS = [
    ("linalg.cholesky", (np.ones((3, 3), np.int32),), {}),
    ("linalg.cholesky", (np.ones((3,), np.float32),), {}),
    ("linalg.cholesky", (np.ones((2, 3), np.float32),), {}),
    ("linalg.cholesky", (np.ones((2, 2), np.complex64),), {}),
    ("linalg.cholesky_inv", (np.ones((2, 3), np.float32),), {}),
    ("linalg.inv", (np.ones((2, 2), np.float16),), {}),
    ("linalg.inv", (np.ones((2, 3), np.float32),), {}),
    ("linalg.tri_inv", (np.ones((2,), np.float32),), {}),
    ("linalg.lu", (np.ones((3,), np.float32),), {}),
    ("linalg.lu_factor", (np.ones((3, 3), np.int32),), {}),
    ("linalg.qr", (np.ones((3, 3), np.complex64),), {}),
    ("linalg.svd", (np.ones((3,), np.float32),), {}),
    ("linalg.svd", (np.ones((3, 3), np.int32),), {}),
    ("linalg.eig", (np.ones((2, 3), np.float32),), {}),
    ("linalg.eigvals", (np.ones((3, 3), np.float16),), {}),
    ("linalg.eigh", (np.ones((3,), np.float32),), {}),
    ("linalg.eigvalsh", (np.ones((2, 3), np.float32),), {}),
    ("linalg.det", (np.ones((2, 3), np.float32),), {}),
    ("linalg.det", (np.ones((2, 2), np.complex64),), {}),
    ("linalg.det", (np.ones((5, 5), np.float16),), {}),
    ("linalg.slogdet", (np.ones((3,), np.float32),), {}),
    ("linalg.pinv", (np.ones((3, 3), np.int32),), {}),
    ("linalg.solve", (np.ones((3, 3), np.int32), np.ones((3,), np.int32)), {}),
    ("linalg.solve", (np.ones((3, 3), np.float32), np.ones((4,), np.float32)), {}),
    ("linalg.solve", (np.ones((2, 3), np.float32), np.ones((3,), np.float32)), {}),
    ("linalg.solve", (np.ones((3, 3), np.float32), np.array(1, np.float32)), {}),
    ("linalg.solve_triangular", (np.ones((3, 3), np.float32), np.ones((4, 3), np.float32)), {}),
    ("linalg.cross", (np.ones((4,), np.float32), np.ones((4,), np.float32)), {}),
    ("linalg.cross", (np.ones((3,), np.float32), np.ones((3,), np.float32)), {"axis": 2}),
    ("linalg.norm", (np.ones((2, 2, 2), np.float32), "fro"), {}),
    ("linalg.norm", (np.ones((2, 2, 2), np.float32), 2), {}),
    ("linalg.norm", (np.ones((2,), np.float32), "nuc"), {"axis": 0}),
    ("linalg.norm", (np.ones((2, 2), np.float32), 3), {}),
    ("linalg.norm", (np.ones((2, 2), np.float32), "abc"), {}),
    ("linalg.norm", (np.ones((2, 2, 2), np.float32),), {"axis": (0, 1, 2)}),
    ("linalg.norm", (np.ones((2, 2), np.float32),), {"axis": (0, 0)}),
    ("linalg.norm", (np.ones((2, 2), np.float32),), {"axis": 5}),
    ("linalg.norm", (np.ones((2, 2), np.float16), 2), {}),
]


@pytest.mark.parametrize("name,args,kwargs", ERRORS, ids=[f"{e[0]}-{i}" for i, e in enumerate(ERRORS)])
def test_errors(name, args, kwargs):
    err = same_error(name, *args, **kwargs)
    assert "[" in str(err)  # names the op


@pytest.mark.parametrize("args,kwargs", [
    ((np.zeros(3, np.float32), np.eye(3, dtype=np.float32)), {"dtype": "float64"}),
    ((np.zeros(3, np.float32), np.eye(2, dtype=np.float32)), {}),
    ((np.float32(0), np.eye(2, dtype=np.float32)), {}),
])
def test_multivariate_normal_errors(args, kwargs):
    from mlx_oracle import Dt
    kwargs = {k: Dt(v) if k == "dtype" else v for k, v in kwargs.items()}
    same_error("random.multivariate_normal", *args, **kwargs)


# MLX 0.32.4 differentiates none of the factorizations (only det/slogdet of
# matrices up to 3x3, and norm); Alloy refuses the same ones, with MLX's type.
@pytest.mark.parametrize("fn", [
    lambda m, a: m.grad(lambda y: m.linalg.inv(y).sum())(a),
    lambda m, a: m.grad(lambda y: m.linalg.cholesky(y @ y.T + 4 * m.eye(4)).sum())(a),
    lambda m, a: m.grad(lambda y: m.linalg.svd(y, compute_uv=False).sum())(a),
    lambda m, a: m.grad(lambda y: m.linalg.eigvalsh(y).sum())(a),
    lambda m, a: m.grad(lambda y: m.linalg.qr(y)[1].sum())(a),
    lambda m, a: m.grad(m.linalg.det)(a),
], ids=["inv", "cholesky", "svd", "eigvalsh", "qr", "det4"])
def test_no_gradient_where_mlx_has_none(rng, fn):
    same_error(fn, general(rng, (4, 4)))


# Strided and broadcast inputs (the CPU copies them to LAPACK's layout; the
# GPU copies them into cuSOLVER's).
@pytest.mark.parametrize("name", ["linalg.qr", "linalg.lu", "linalg.pinv", "linalg.inv", "linalg.eigvalsh",
                                  "linalg.cholesky", "linalg.det"])
def test_strided_inputs(rng, name):
    x = spd(rng, (2, 4, 4))
    def f(m, a):
        fn = m
        for part in name.split("."):
            fn = getattr(fn, part)
        strided = m.swapaxes(m.broadcast_to(a[:1], (3, 4, 4)), -1, -2)[::2]
        return fn(strided)
    same(f, x, rtol=1e-3, atol=1e-4)


def test_non_finite_input_raises_cleanly():
    x = np.full((3, 3), np.nan, np.float32)
    # MLX 0.32.4 aborts the process on eig of NaN; Alloy raises (eig runs
    # LAPACK on the host on either device).
    for f in (mx.linalg.eig, mx.linalg.eigvals):
        with pytest.raises(RuntimeError, match="NaN or infinity"):
            mx.eval(f(mx.array(x)))
    # LAPACK's SVD (the CPU's) refuses NaN as MLX's does; cuSOLVER's gesvd
    # (the GPU's) has no such check, so this part is the CPU's contract only.
    with mx.stream(mx.cpu):
        same_error("linalg.svd", x)
        with pytest.raises(RuntimeError, match="NaN or infinity"):
            mx.eval(mx.linalg.pinv(mx.array(x)))


@pytest.mark.parametrize("bshape", [(4,), (4, 2), (1, 4, 2)])
def test_solve_broadcasts_batches(rng, bshape):
    a, b = general(rng, (3, 4, 4)), random_array(rng, bshape)
    for upper in (False, True):
        same("linalg.solve_triangular", a, b, upper=upper, **TOL["float32"])
    if len(bshape) == 3:
        same("linalg.solve", a, b, **TOL["float32"])
    # solve with an unbatched b: MLX 0.32.4 fails inside take_along_axis;
    # Alloy broadcasts like solve_triangular.
    x = npy(mx.linalg.solve(mx.array(a), mx.array(b)))
    rhs = b if b.ndim > 1 else b[:, None]
    want = np.linalg.solve(a.astype(np.float64), np.broadcast_to(rhs, (3,) + rhs.shape[-2:]))
    np.testing.assert_allclose(x, want if b.ndim > 1 else want[..., 0], atol=1e-4)
