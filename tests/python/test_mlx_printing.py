"""repr/str of arrays, print options, iteration: Alloy's text equals MLX's."""
import numpy as np
import pytest

import alloy.core as mx
import mlx.core as mlx_core
from mlx_oracle import random_array

CASES = [
    ((), "float32"), ((), "bool"), ((), "int64"), ((4,), "float32"), ((3, 2), "int32"),
    ((2, 3, 4), "float32"), ((2, 2, 2, 2), "int8"), ((7,), "int16"), ((12, 3), "uint8"),
    ((2, 9), "float16"), ((3, 8, 2), "bfloat16"), ((5,), "complex64"), ((4,), "bool"),
    ((0,), "float32"), ((3, 0), "float32"), ((2, 0, 3), "int32"), ((1, 1001), "float32"), ((6,), "uint32"),
]


def texts(x):
    """repr and str of the same values in both frameworks."""
    a = mx.array(x.astype(np.float32)).astype(mx.bfloat16) if x.dtype.name == "bfloat16" else mx.array(x)
    b = (mlx_core.array(x.astype(np.float32)).astype(mlx_core.bfloat16) if x.dtype.name == "bfloat16"
         else mlx_core.array(x))
    return (repr(a), str(a)), (repr(b), str(b))


@pytest.mark.parametrize("shape,dtype", CASES)
def test_repr_matches_mlx(rng, shape, dtype):
    x = random_array(rng, shape, dtype, low=-50, high=50)
    got, want = texts(x)
    assert got == want


def test_special_values_match_mlx():
    for x in [np.array([np.nan, np.inf, -np.inf, -0.0, 1e-8, 1e10, 123456789.0], np.float32),
              np.array([1.5 + 2.25j, -1e-9 - 3e10j, 2 - 0.5j], np.complex64),
              np.array([2**31 - 1, -2**31], np.int32), np.array(2.0**70, np.float32)]:
        got, want = texts(x)
        assert got == want


def test_transposed_and_sliced_views(rng):
    x = random_array(rng, (4, 9), "float32")
    assert repr(mx.array(x).T) == repr(mlx_core.array(x).T)
    assert repr(mx.array(x)[1:, ::2]) == repr(mlx_core.array(x)[1:, ::2])


@pytest.mark.parametrize("precision", [0, 3, 10])
def test_printoptions_context(rng, precision):
    x = random_array(rng, (2, 3), "float32", low=-500, high=500)
    c = random_array(rng, (2,), "complex64")
    h = random_array(rng, (3,), "float16")
    for m in (mx, mlx_core):
        assert m.get_printoptions().precision == -1
    with mx.printoptions(precision=precision) as ctx_a, mlx_core.printoptions(precision=precision):
        assert isinstance(ctx_a, mx._PrintOptionsContext)
        assert mx.get_printoptions().precision == precision
        for v in (x, c, h):
            got, want = texts(v)
            assert got == want
    for m in (mx, mlx_core):
        assert m.get_printoptions().precision == -1


def test_set_printoptions_and_restore():
    try:
        with mx.printoptions(precision=2):
            mx.set_printoptions(precision=5)
            assert mx.get_printoptions().precision == 5
        # Leaving the block puts back what was there on entry, as in MLX.
        assert mx.get_printoptions().precision == -1
        mx.set_printoptions(4)
        mlx_core.set_printoptions(4)
        x = np.array([1 / 3, 2 / 3], np.float32)
        got, want = texts(x)
        assert got == want
        mx.set_printoptions()
        assert mx.get_printoptions().precision == -1
    finally:
        mx.set_printoptions()
        mlx_core.set_printoptions()
    with pytest.raises(TypeError):
        mx.set_printoptions(precision="a")


def test_print_options_object():
    p = mx.PrintOptions(precision=4)
    assert p.precision == 4
    p.precision = 2
    assert p.precision == 2
    assert mx.PrintOptions().precision == mlx_core.PrintOptions().precision
    assert mx.get_printoptions() is not mx.get_printoptions()  # a copy each call, as MLX


def test_array_iterator(rng):
    x = random_array(rng, (4, 3), "int32")
    a = mx.array(x)
    it = iter(a)
    assert isinstance(it, mx.ArrayIterator)
    rows = list(it)
    assert len(rows) == 4
    for r, want in zip(rows, x):
        assert r.shape == (3,)
        np.testing.assert_array_equal(np.array(r), want)
    it = iter(a)
    next(it)
    np.testing.assert_array_equal(np.array(next(iter(it))), x[1])  # iter(it) keeps its place
    assert list(iter(mx.zeros((0, 3)))) == []
    assert [v.item() for v in mx.array([5, 6, 7])] == [5, 6, 7]
    with pytest.raises(TypeError):
        iter(mx.array(1))
    with pytest.raises(TypeError):
        mx.ArrayIterator(a)


def test_array_like():
    assert isinstance(mx.ArrayLike, type)
    assert mx.ArrayLike(3) is not None
    with pytest.raises(TypeError):
        mx.ArrayLike()
