"""Indexing against numpy: basic slicing (views, negative steps), advanced
integer-array indexing with numpy's placement rules, take / take_along_axis /
put_along_axis, a[idx] = v, a.at[idx].op(v), and index errors."""
import pathlib
import sys

import ml_dtypes
import numpy as np
import pytest

import alloy.core as mx
from mlx_oracle import same_error


def to_mx(x):
    """mx.array keeping float64 (plain conversion turns numpy float64 into float32, as MLX)."""
    return mx.array(x, dtype=mx.float64) if x.dtype == np.float64 else mx.array(x)

ALL_DTYPES = ["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
              "float16", "bfloat16", "float32", "float64", "complex64"]


def random_array(rng, shape, name="float32"):
    if name == "bool":
        return rng.random(shape) < 0.5
    if name.startswith("uint") or name.startswith("int"):
        return rng.integers(0, 100, size=shape).astype(name)
    if name == "complex64":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
    dt = ml_dtypes.bfloat16 if name == "bfloat16" else np.dtype(name)
    return rng.standard_normal(shape).astype(dt)


def check(out, expected):
    got = np.array(out)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_array_equal(got, expected)


BASIC = [
    (0,), (-1,), (slice(None),), (slice(1, 3),), (slice(None, None, -1),), (slice(None, None, 2),),
    (slice(4, 0, -2),), (slice(-2, None),), (slice(10, 20),), (slice(None, None, -3), 1),
    (Ellipsis, 0), (None, 1), (Ellipsis, None), (1, Ellipsis, slice(None, None, -1)), (slice(1, -1), None, 2),
    (0, 1, 2), (), (Ellipsis,), (None, Ellipsis, None), (slice(3, 1), 0),
]


@pytest.mark.parametrize("idx", BASIC)
def test_basic_indexing(rng, idx):
    x = random_array(rng, (5, 4, 3))
    check(mx.array(x)[idx], x[idx])


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_slicing_every_dtype(rng, dtype):
    x = random_array(rng, (6, 5), dtype)
    a = to_mx(x)
    check(a[::-2, 1:4], x[::-2, 1:4])
    check(a[::2], x[::2])
    check(a[3], x[3])
    check(a[:, ::-1][1:, 2], x[:, ::-1][1:, 2])


def test_zero_d_and_empty(rng):
    s = mx.array(np.float32(2.5))
    check(s[()], np.float32(2.5) * np.ones((), np.float32))
    check(s[None], np.array([2.5], np.float32))
    check(s[...], np.array(2.5, np.float32))
    e = mx.zeros((0, 3))
    check(e[:, 1], np.zeros((0,), np.float32))
    check(e[::-1], np.zeros((0, 3), np.float32))


ADVANCED = [
    lambda n: (np.array([0, 2, -1]),),
    lambda n: (np.array([[0, 1], [3, 3]]), slice(None), 1),
    lambda n: (slice(None), np.array([2, 0])),
    lambda n: (np.array([0, 1]), np.array([1, 2])),
    lambda n: (np.array([0, 1])[:, None], np.array([1, 2, 0])),
    lambda n: (np.array([1, 0]), slice(None), np.array([2, 0])),  # separated -> advanced dims first
    lambda n: (slice(1, None), np.array([[0], [3]]), np.array([1, 2])),
    lambda n: (Ellipsis, np.array([2, 1])),
    lambda n: (None, np.array([0, 4]), slice(None, None, -1)),
    lambda n: (0, slice(None), np.array([1, 1])),  # int + array separated by a slice
    lambda n: (slice(None), 1, np.array([0, 2])),  # int adjacent to array
    lambda n: ([0, 3, 4],),
    lambda n: ([[1, 2], [0, 0]], 1),
    lambda n: (np.array(3), slice(None)),
]


@pytest.mark.parametrize("make", ADVANCED)
def test_advanced_indexing(rng, make):
    x = random_array(rng, (5, 4, 3))
    idx = make(0)
    mx_idx = tuple(mx.array(i) if isinstance(i, np.ndarray) else i for i in idx)
    check(mx.array(x)[mx_idx], x[idx])
    check(mx.array(x)[idx if len(idx) > 1 else idx[0]], x[idx])  # numpy / list indices work too


def test_seed_grid_sample_pattern(rng):
    # x[mx.arange(N)[:, None, None], iy, ix, :] from the MLX custom-kernel guide.
    N, H, W, C, gH, gW = 2, 7, 6, 3, 4, 5
    x = random_array(rng, (N, H, W, C))
    iy = rng.integers(0, H, size=(N, gH, gW)).astype(np.int32)
    ix = rng.integers(0, W, size=(N, gH, gW)).astype(np.int32)
    out = mx.array(x)[mx.arange(N)[:, None, None], mx.array(iy), mx.array(ix), :]
    assert out.shape == (N, gH, gW, C)
    check(out, x[np.arange(N)[:, None, None], iy, ix, :])


def test_negative_array_indices_wrap(rng):
    x = random_array(rng, (5, 3))
    check(mx.array(x)[mx.array([-1, -5, 2])], x[[-1, -5, 2]])


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint32", "int64"])
def test_index_dtypes(rng, dtype):
    x = random_array(rng, (7, 3))
    i = rng.integers(0, 7, size=(4,)).astype(dtype)
    check(mx.array(x)[mx.array(i)], x[i])


def test_take(rng):
    x = random_array(rng, (4, 5, 6))
    a = mx.array(x)
    i = rng.integers(-4, 4, size=(2, 3))
    check(mx.take(a, mx.array(i), axis=0), np.take(x, i, axis=0))
    j = rng.integers(0, 6, size=(7,))
    check(mx.take(a, mx.array(j), axis=-1), np.take(x, j, axis=-1))
    k = rng.integers(0, x.size, size=(3, 2))
    check(mx.take(a, mx.array(k)), np.take(x, k))
    check(mx.take(a, 2, axis=1), np.take(x, 2, axis=1))


def test_take_along_and_put_along_axis(rng):
    x = random_array(rng, (4, 5, 3))
    a = mx.array(x)
    for axis in (0, 1, -1):
        n = x.shape[axis]
        shape = list(x.shape)
        shape[axis] = 2
        i = rng.integers(0, n, size=shape)
        check(mx.take_along_axis(a, mx.array(i), axis=axis), np.take_along_axis(x, i, axis=axis))
        v = random_array(rng, shape)
        # Repeated indices along the axis write an unspecified one of the values in numpy; use unique ones.
        i_unique = np.argsort(rng.random(x.shape), axis=axis).take(range(2), axis=axis)
        want = x.copy()
        np.put_along_axis(want, i_unique, v, axis=axis)
        check(mx.put_along_axis(a, mx.array(i_unique), mx.array(v), axis=axis), want)
    # broadcasting indices (size-1 dims)
    i = rng.integers(0, 5, size=(1, 2, 1))
    check(mx.take_along_axis(a, mx.array(i), axis=1), np.take_along_axis(x, i, axis=1))
    # axis=None flattens
    f = rng.integers(0, x.size, size=(6,))
    check(mx.take_along_axis(a, mx.array(f), axis=None), np.take_along_axis(x, f, axis=None))


def test_setitem_basic(rng):
    x = random_array(rng, (5, 4))
    a = mx.array(x)
    a[1] = 3.0
    x[1] = 3.0
    a[::-2, 1:3] = mx.array([[1.0, 2.0]])
    x[::-2, 1:3] = np.array([[1.0, 2.0]], np.float32)
    a[..., -1] = mx.arange(5).astype(mx.float32)
    x[..., -1] = np.arange(5)
    a[None, 0, :2] = 7.0
    x[None, 0, :2] = 7.0
    check(a, x)


def test_setitem_advanced(rng):
    x = random_array(rng, (5, 4, 3))
    a = mx.array(x)
    i = np.array([4, 0, 2])
    a[mx.array(i)] = 0.0
    x[i] = 0.0
    a[mx.array(i), :, mx.array([1, 0, 2])] = mx.array(np.arange(12, dtype=np.float32).reshape(3, 4))
    x[i, :, [1, 0, 2]] = np.arange(12, dtype=np.float32).reshape(3, 4)
    a[1:4, mx.array([[0], [3]]), 1] = 5.5
    x[1:4, np.array([[0], [3]]), 1] = 5.5
    check(a, x)


def test_setitem_is_seen_by_other_names():
    a = mx.zeros((3,))
    b = a  # the same Python object, as in MLX
    a[0] = 1.0
    np.testing.assert_array_equal(np.array(b), [1, 0, 0])


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "maximum", "minimum"])
def test_at_updates(rng, op):
    x = rng.uniform(1, 2, size=(6, 3)).astype(np.float32)
    v = rng.uniform(1, 2, size=(4, 3)).astype(np.float32)
    i = np.array([0, 2, 2, 5])  # repeated index accumulates
    ufunc = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
             "maximum": np.maximum, "minimum": np.minimum}[op]
    want = x.copy()
    ufunc.at(want, i, v)
    got = getattr(mx.array(x).at[mx.array(i)], op)(mx.array(v))
    np.testing.assert_allclose(np.array(got), want, rtol=1e-6)
    # basic index form
    want = x.copy()
    want[1:3] = ufunc(want[1:3], 1.5)
    np.testing.assert_allclose(np.array(getattr(mx.array(x).at[1:3], op)(1.5)), want, rtol=1e-6)


def test_index_errors():
    a = mx.zeros((3, 4))
    with pytest.raises(IndexError, match=r"index 3 is out of bounds for axis 0 with size 3"):
        a[3]
    with pytest.raises(IndexError, match=r"axis 1 with size 4"):
        a[0, -5]
    # Too many indices: MLX's ValueError and numpy's IndexError at once.
    with pytest.raises(IndexError, match=r"too many indices"):
        a[0, 0, 0]
    with pytest.raises(ValueError, match=r"too many indices"):
        a[0, 0, 0]
    same_error(lambda m, x: x[0, 0, 0], np.zeros((3, 4), np.float32))
    # host index data (lists, numpy) is checked eagerly, as numpy does
    with pytest.raises(IndexError, match=r"index 7 is out of bounds for axis 0 with size 3"):
        a[[0, 7]]
    with pytest.raises(IndexError, match=r"index -5 is out of bounds for axis 1 with size 4"):
        a[:, np.array([[1], [-5]])]
    with pytest.raises(IndexError):
        a[mx.array([0.5])]
    # Unusable index types: MLX's ValueError and numpy's IndexError at once.
    for bad in (1.5, "a", object()):
        with pytest.raises(IndexError, match="cannot index with an object of type"):
            a[bad]
        same_error(lambda m, x, bad=bad: x[bad], np.zeros((3, 4), np.float32))
    same_error(lambda m, x: x[m.array([0.5])], np.zeros((3, 4), np.float32))
    with pytest.raises(ValueError, match=r"slice step cannot be zero"):
        a[::0]
    with pytest.raises(IndexError, match=r"out of bounds"):
        a[5] = 1.0
    with pytest.raises(ValueError, match=r"cannot broadcast"):
        a[0] = mx.zeros((3,))
    # Index arrays that do not broadcast, and two Ellipses: ValueError, as
    # MLX raises (numpy's is IndexError).
    with pytest.raises(ValueError, match=r"broadcast"):
        a[mx.array([0, 1]), mx.array([0, 1, 2])]
    with pytest.raises(ValueError, match=r"one Ellipsis"):
        a[..., ...]
    same_error(lambda m, x: x[m.array([0, 1]), m.array([0, 1, 2])], np.zeros((3, 4), np.float32))
    same_error(lambda m, x: x[..., 0, ...], np.zeros((3, 4), np.float32))


# ---- derivatives: for a linear f, jvp(t) = f(t) and <c, f(t)> = <vjp(c), t>


def check_linear_derivatives(rng, f, in_shapes):
    xs = [rng.standard_normal(s).astype(np.float32) for s in in_shapes]
    ts = [rng.standard_normal(s).astype(np.float32) for s in in_shapes]
    fun = lambda *args: [f(*args)]
    out = np.array(f(*[mx.array(t) for t in ts]))
    cot = rng.standard_normal(out.shape).astype(np.float32)
    (_,), grads = mx.vjp(fun, [mx.array(x) for x in xs], [mx.array(cot)])
    lhs = float((cot.astype(np.float64) * out).sum())
    rhs = sum(float((np.array(g).astype(np.float64) * t).sum()) for g, t in zip(grads, ts))
    assert abs(lhs - rhs) <= 1e-4 * (1 + abs(lhs)), (lhs, rhs)
    (_,), (tan,) = mx.jvp(fun, [mx.array(x) for x in xs], [mx.array(t) for t in ts])
    np.testing.assert_allclose(np.array(tan), out, rtol=1e-5, atol=1e-6)


IDX = np.array([[0, 3], [3, 1]])  # a repeated index: gradients accumulate


@pytest.mark.parametrize("name,f,shapes", [
    ("slice", lambda a: a[1:, ::-2], [(4, 5)]),
    ("int+slice", lambda a: a[2, None, 1:4], [(4, 5)]),
    ("gather", lambda a: a[mx.array(IDX), :, mx.array([1, 0])], [(4, 3, 2)]),
    ("seed-pattern", lambda a: a[mx.arange(2)[:, None, None], mx.array(IDX)[None], mx.array(IDX.T)[None], :],
     [(2, 4, 4, 3)]),
    ("take", lambda a: mx.take(a, mx.array(IDX), axis=1), [(3, 4)]),
    ("take_along_axis", lambda a: mx.take_along_axis(a, mx.array([[0, 0], [2, 1]]), axis=1), [(2, 3)]),
    ("setitem-basic", lambda a, v: _set(a, (slice(None), 1), v), [(3, 4), (3,)]),
    ("setitem-advanced", lambda a, v: _set(a, (mx.array([2, 0]),), v), [(3, 4), (2, 4)]),
    ("at-add", lambda a, v: a.at[mx.array([1, 1, 0])].add(v), [(3, 2), (3, 2)]),
    ("put_along_axis", lambda a, v: mx.put_along_axis(a, mx.array([[1], [0]]), v, axis=1), [(2, 3), (2, 1)]),
])
def test_indexing_derivatives(rng, name, f, shapes):
    check_linear_derivatives(rng, f, shapes)


def _set(a, idx, v):
    a = a * 1.0  # a new node, so the caller's array is not the one replaced
    a[idx] = v
    return a


def test_lazy_out_of_range_indices_clamp_on_gather_and_drop_on_scatter(rng):
    # MLX leaves these undefined; alloy never touches memory outside the array:
    # gathers clamp to the axis, scatters drop the update (JAX's rule).
    x = random_array(rng, (4, 3))
    a = mx.array(x)
    check(a[mx.array([0, 9, -9, -1])], x[[0, 3, 0, 3]])
    check(mx.take(a, mx.array([5]), axis=1), x[:, [2]])
    i = mx.array([1, 4, -5])
    check(a.at[i].add(1.0), x + np.array([[0], [1], [0], [0]], np.float32))
    b = mx.array(x)
    b[mx.array([7, 2])] = 0.0
    want = x.copy()
    want[2] = 0
    check(b, want)


def test_seed_grid_sample_reference(rng):
    # grid_sample_ref from the MLX custom Metal kernel guide (examples/seeds,
    # unchanged but for the import): it gathers out-of-range neighbours and
    # masks them, which needs our advanced indexing to clamp, not fail.
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples" / "seeds"))
    from grid_sample import grid_sample_ref
    from shared_fixtures import grid_sample_numpy

    x = rng.standard_normal((2, 6, 5, 3)).astype(np.float32)
    grid = rng.uniform(-1, 1, size=(2, 4, 7, 2)).astype(np.float32)
    got = grid_sample_ref(mx.array(x), mx.array(grid))
    assert got.shape == (2, 4, 7, 3)
    np.testing.assert_allclose(np.array(got), grid_sample_numpy(x, grid),
                               rtol=1e-4, atol=1e-5)
