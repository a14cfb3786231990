"""matmul against numpy in float64: shapes (1-D promotion, broadcast batches),
strided operands, every supported dtype, the @ operator, errors."""
import ml_dtypes
import numpy as np
import pytest

import alloy.core as mx


def to_mx(x):
    """mx.array keeping float64 (plain conversion turns numpy float64 into float32, as MLX)."""
    return mx.array(x, dtype=mx.float64) if x.dtype == np.float64 else mx.array(x)

TOL = {"float16": 2e-2, "bfloat16": 1e-1, "float32": 1e-4, "float64": 1e-12, "complex64": 1e-4}


def operand(rng, shape, dtype):
    if dtype.startswith("int") or dtype.startswith("uint"):
        return rng.integers(0, 10, size=shape).astype(dtype)
    if dtype == "complex64":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
    dt = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    return rng.standard_normal(shape).astype(dt)


def reference(x, y):
    wide = np.complex128 if np.iscomplexobj(x) else np.float64
    return np.matmul(x.astype(wide), y.astype(wide))


SHAPES = [((3, 4), (4, 5)), ((4,), (4, 2)), ((3, 4), (4,)), ((4,), (4,)), ((2, 3, 4), (4, 5)),
          ((2, 1, 3, 4), (5, 4, 2)), ((1, 4), (3, 4, 1)), ((0, 3), (3, 2)), ((3, 0), (0, 2)), ((7, 1), (1, 9))]


@pytest.mark.parametrize("sa,sb", SHAPES)
def test_matmul_shapes(rng, sa, sb):
    x, y = operand(rng, sa, "float32"), operand(rng, sb, "float32")
    got = mx.matmul(mx.array(x), mx.array(y))
    want = reference(x, y)
    assert got.shape == want.shape
    np.testing.assert_allclose(np.array(got), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "complex64", "int32", "int64",
                                   "uint8", "int16"])
def test_matmul_dtypes(rng, dtype):
    x, y = operand(rng, (2, 5, 6), dtype), operand(rng, (6, 3), dtype)
    got = to_mx(x) @ to_mx(y)
    assert str(got.dtype).endswith(dtype)
    want = reference(x, y)
    if dtype in TOL:
        tol = TOL[dtype]
        np.testing.assert_allclose(np.array(got).astype(want.dtype), want, rtol=tol, atol=tol * 4)
    else:
        np.testing.assert_array_equal(np.array(got), np.matmul(x, y))


def test_matmul_strided_operands(rng):
    x = operand(rng, (6, 8, 10), "float32")
    y = operand(rng, (10, 12), "float32")
    a, b = mx.array(x), mx.array(y)
    cases = [
        (a.swapaxes(1, 2), b[:8], x.swapaxes(1, 2), y[:8]),  # transposed A
        (a, b.T.T, x, y),
        (a[:, ::2], b[:, ::-3], x[:, ::2], y[:, ::-3]),  # gaps and negative strides -> copies
        (a[::2, 1:5, 2:7], mx.array(y).T[1:6, :5], x[::2, 1:5, 2:7], y.T[1:6, :5]),
        (mx.broadcast_to(b[:8, :3], (4, 8, 3)).swapaxes(1, 2), a[:4], None, None),
    ]
    for ma, mb, na, nb in cases[:4]:
        np.testing.assert_allclose(np.array(ma @ mb), reference(na, nb), rtol=1e-4, atol=1e-4)
    ma, mb = cases[4][0], cases[4][1]
    want = reference(np.broadcast_to(y[:8, :3], (4, 8, 3)).swapaxes(1, 2), x[:4])
    np.testing.assert_allclose(np.array(ma @ mb), want, rtol=1e-4, atol=1e-4)


def test_matmul_promotes_mixed_dtypes(rng):
    x = operand(rng, (3, 4), "float16")
    y = operand(rng, (4, 2), "float32")
    got = mx.matmul(mx.array(x), mx.array(y))
    assert got.dtype == mx.float32
    np.testing.assert_allclose(np.array(got), reference(x, y), rtol=1e-3, atol=1e-3)


def test_rmatmul_and_imatmul(rng):
    x, y = operand(rng, (3, 3), "float32"), operand(rng, (3, 3), "float32")
    a = mx.array(x)
    np.testing.assert_allclose(np.array(mx.matmul(y, a)), reference(y, x), rtol=1e-4, atol=1e-5)
    a @= mx.array(y)
    np.testing.assert_allclose(np.array(a), reference(x, y), rtol=1e-4, atol=1e-5)


def test_matmul_errors():
    with pytest.raises(ValueError, match=r"\[matmul\]"):
        mx.matmul(mx.zeros((2, 3)), mx.zeros((4, 2)))
    with pytest.raises(ValueError, match=r"\[matmul\]"):
        mx.matmul(mx.zeros(()), mx.zeros((2,)))
    with pytest.raises(ValueError, match=r"broadcast"):
        mx.matmul(mx.zeros((2, 2, 3)), mx.zeros((3, 3, 4)))


@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((4,), (4, 2)), ((2, 1, 3, 4), (5, 4, 2)), ((3, 4), (4,))])
def test_matmul_derivatives(rng, sa, sb):
    x, y = operand(rng, sa, "float32"), operand(rng, sb, "float32")
    out_shape = np.matmul(x, y).shape
    cot = rng.standard_normal(out_shape).astype(np.float32)
    (_,), (ga, gb) = \
        mx.vjp(lambda a, b: [a @ b], [mx.array(x), mx.array(y)], [mx.array(cot)])
    # along random directions dx, dy: <ga, dx> = <cot, dx y> and <gb, dy> = <cot, x dy> (float64)
    dx = rng.standard_normal(sa)
    dy = rng.standard_normal(sb)
    c = cot.astype(np.float64)
    want_x = (c * np.matmul(dx, y.astype(np.float64))).sum()
    want_y = (c * np.matmul(x.astype(np.float64), dy)).sum()
    assert np.array(ga).shape == sa and np.array(gb).shape == sb
    np.testing.assert_allclose((np.array(ga) * dx).sum(), want_x, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose((np.array(gb) * dy).sum(), want_y, rtol=1e-4, atol=1e-4)
    (_,), (tan,) = mx.jvp(lambda a, b: [a @ b], [mx.array(x), mx.array(y)],
                          [mx.array(dx.astype(np.float32)), mx.array(dy.astype(np.float32))])
    want = np.matmul(dx, y) + np.matmul(x, dy)
    np.testing.assert_allclose(np.array(tan), want, rtol=1e-4, atol=1e-4)
