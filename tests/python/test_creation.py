"""Creation ops against numpy: zeros/ones/full(+_like), arange, linspace, eye, identity."""
import ml_dtypes
import numpy as np
import pytest

import alloy.core as mx

ALL_DTYPES = ["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
              "float16", "bfloat16", "float32", "float64", "complex64"]


def np_dtype(name):
    return ml_dtypes.bfloat16 if name == "bfloat16" else np.dtype(name)


def mx_dtype(name):
    # MLX spells the boolean dtype mx.bool_ (alloy's dtype table may only export "bool").
    return mx.bool_ if name == "bool" else getattr(mx, name)


def check(out, expected):
    got = np.array(out)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_zeros_ones_full_every_dtype(dtype):
    d = mx_dtype(dtype)
    check(mx.zeros((2, 3), dtype=d), np.zeros((2, 3), np_dtype(dtype)))
    check(mx.ones((4,), d), np.ones((4,), np_dtype(dtype)))
    check(mx.full((3, 1), 1, dtype=d), np.full((3, 1), 1, np_dtype(dtype)))
    assert mx.zeros((2, 3), dtype=d).dtype == d


def test_shapes_and_defaults(rng):
    check(mx.zeros(3), np.zeros(3, np.float32))
    check(mx.zeros(()), np.zeros((), np.float32))
    check(mx.ones((0, 4)), np.ones((0, 4), np.float32))
    check(mx.full((2, 2), 7), np.full((2, 2), 7, np.int32))
    check(mx.full((2, 2), 2.5), np.full((2, 2), 2.5, np.float32))
    check(mx.full((2,), True), np.full((2,), True))
    row = rng.standard_normal(3).astype(np.float32)
    check(mx.full((2, 3), mx.array(row)), np.broadcast_to(row, (2, 3)))
    check(mx.full((2, 3), mx.array(row), dtype=mx.float16), np.broadcast_to(row, (2, 3)).astype(np.float16))
    x = mx.array(rng.standard_normal((3, 2)).astype(np.float16))
    check(mx.zeros_like(x), np.zeros((3, 2), np.float16))
    check(mx.ones_like(x), np.ones((3, 2), np.float16))
    check(mx.full_like(x, 3), np.full((3, 2), 3, np.float16))


def test_full_is_not_a_broadcast_view():
    before = mx.get_active_memory()
    a = mx.full((64, 64), 1.0)
    mx.eval(a)
    assert mx.get_active_memory() >= before + 64 * 64 * 4


@pytest.mark.parametrize("args", [(5,), (0,), (-3,), (2, 9), (2, 9, 3), (9, 2, -2), (-4, 4, 3), (0, 1, 0.1),
                                  (0.5, 3.0), (1.5,), (3, 0), (-1.0, 1.0, 0.25)])
def test_arange(args):
    want = np.arange(*args)
    got = mx.arange(*args)
    ints = all(isinstance(v, int) for v in args)
    assert got.dtype == (mx.int32 if ints else mx.float32)
    np.testing.assert_allclose(np.array(got), want.astype(np.int32 if ints else np.float32), rtol=1e-6, atol=1e-6)
    assert got.shape == want.shape


def test_arange_dtype_and_errors():
    check(mx.arange(0, 5, dtype=mx.float16), np.arange(0, 5, dtype=np.float16))
    check(mx.arange(10, dtype=mx.int64), np.arange(10, dtype=np.int64))
    check(mx.arange(np.int64(4)), np.arange(4, dtype=np.int32))
    with pytest.raises(ValueError, match=r"\[arange\]"):
        mx.arange(0, 10, 0)
    with pytest.raises(ValueError, match=r"\[arange\]"):
        mx.arange(0.0, float("inf"))


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "float32"])
def test_arange_of_fractional_bounds_in_a_dtype_as_numpy_and_mlx(rng, dtype):
    """The first value and the step are the dtype's: an integer range steps
    by int(start + step) - int(start), as numpy and MLX do."""
    import mlx.core as mlx_core

    for _ in range(20):
        start, stop = float(rng.uniform(-6, 6)), float(rng.uniform(-6, 6))
        step = float(rng.choice([1, -1]) * rng.uniform(0.2, 2.5))
        got = np.array(mx.arange(start, stop, step, dtype=getattr(mx, dtype)))
        want = np.array(mlx_core.arange(start, stop, step, dtype=getattr(mlx_core, dtype)))
        assert got.dtype == want.dtype and got.shape == want.shape, (start, stop, step)
        # MLX adds the step in float32 over and over: near zero its values are
        # off by the rounding of the terms, not of the result.
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6 * (abs(start) + abs(stop)),
                                   err_msg=f"arange({start}, {stop}, {step}, {dtype})")
        if dtype != "float32":
            np.testing.assert_array_equal(got, np.arange(start, stop, step, dtype=dtype))


def test_arange_with_an_infinite_step_holds_its_start_if_in_range():
    for start, stop, step, want in [(0, 5, float("inf"), [0.0]), (5, 0, float("inf"), []),
                                    (5, 0, -float("inf"), [5.0]), (1.5, 2, float("inf"), [1.5])]:
        check(mx.arange(start, stop, step), np.array(want, np.float32))


@pytest.mark.parametrize("start,stop,num", [(0, 1, 5), (-2.5, 7.0, 50), (3, 3, 4), (1, 0, 1), (0, 10, 0)])
def test_linspace(start, stop, num):
    want = np.linspace(start, stop, num)
    got = mx.linspace(start, stop, num)
    assert got.dtype == mx.float32
    np.testing.assert_allclose(np.array(got), want.astype(np.float32), rtol=1e-6, atol=1e-6)
    check(mx.linspace(start, stop, num, dtype=mx.float64), want)


@pytest.mark.parametrize("n,m,k", [(3, None, 0), (4, 2, 0), (2, 5, 1), (4, 4, -2), (3, 3, 5), (0, None, 0)])
def test_eye_identity(n, m, k):
    check(mx.eye(n, m, k), np.eye(n, m, k, dtype=np.float32))
    check(mx.eye(n, m, k, dtype=mx.int32), np.eye(n, m, k, dtype=np.int32))
    check(mx.identity(n), np.identity(n, np.float32))


def test_creation_errors():
    with pytest.raises(ValueError, match=r"\[full\]"):
        mx.zeros((2, -1))
    with pytest.raises(ValueError, match=r"\[eye\]"):
        mx.eye(-1)
    with pytest.raises(ValueError, match=r"\[linspace\]"):
        mx.linspace(0, 1, -2)


# ---- mx.array from lists holding arrays, empty lists, complex128 (as MLX) --

LIST_CASES = {
    # MLX stacks arrays in a list, their dtypes promoted with those of the
    # Python numbers beside them (int32, float32); Alloy refused arrays of
    # rank 1 or more, and made an empty list bool.
    "arrays": lambda m, a, b: m.array([a, b]),
    "arrays_nested": lambda m, a, b: m.array([[a], [b]]),
    "array_and_list": lambda m, a, b: m.array([a, [1, 2, 3]]),
    "scalar_arrays_and_int": lambda m, a, b: m.array([a[0], b[1], 2]),
    "array_and_float": lambda m, a, b: m.array([a[:2], [0.5, 1.5]]),
    "empty": lambda m, a, b: m.array([]),
    "empty_nested": lambda m, a, b: m.array([[], []]),
    "empty_int": lambda m, a, b: m.array([], dtype=m.int32),
    "arrays_as_int32": lambda m, a, b: m.array([a, b], dtype=m.int32),
}


@pytest.mark.parametrize("case", sorted(LIST_CASES))
@pytest.mark.parametrize("dtypes", [("float32", "float32"), ("int8", "int8"), ("float16", "int32"),
                                    ("bool", "int16"), ("uint8", "float32")])
def test_array_from_lists_of_arrays_as_mlx(rng, case, dtypes):
    from mlx_oracle import random_array, same
    a, b = (random_array(rng, (3,), d) for d in dtypes)
    same(lambda m, x, y: LIST_CASES[case](m, x, y), a, b)


def test_array_from_lists_of_arrays_errors_as_mlx(rng):
    from mlx_oracle import same_error
    same_error(lambda m, x, y: m.array([x, y]), np.ones(2, np.float32), np.zeros(3, np.float32))
    same_error(lambda m, x: m.array([x, 1.0]), np.ones(2, np.float32))


def test_array_from_complex128_is_complex64_as_mlx(rng):
    from mlx_oracle import assert_same_value
    import mlx.core as mc
    z = rng.standard_normal(5) + 1j * rng.standard_normal(5)
    got = mx.array(z)
    assert got.dtype == mx.complex64
    assert_same_value(got, mc.array(z))
    np.testing.assert_allclose(np.array(got), z.astype(np.complex64))
