"""Differential tests against real MLX: dtype utilities (can_cast, result_type,
isdtype, issubdtype, finfo, iinfo, asarray, astype, empty, empty_like), what a
dtype argument takes (only Dtypes; None for the function's default), the
positional forms MLX accepts (arange, linspace, count_nonzero, stack) and the
views (view, as_strided)."""
import numpy as np
import pytest

import alloy.core as ax
import mlx.core as mlx_core
from mlx_oracle import Dt, random_array, same, same_error

ALL = ["bool_", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
       "float16", "bfloat16", "float32", "float64", "complex64"]


def test_can_cast_and_result_type_every_pair():
    for a in ALL:
        for b in ALL:
            same("can_cast", Dt(a), Dt(b))
            same("result_type", Dt(a), Dt(b))
    same("result_type", Dt("int8"), np.ones(2, np.float16), Dt("uint8"))
    same("result_type", Dt("int16"))
    same("can_cast", np.ones(2, np.float32), Dt("float16"))


def test_dtype_utility_errors():
    same_error("result_type")
    same_error("result_type", 1, Dt("int8"))
    same_error("can_cast", 1, Dt("int32"))
    same_error("can_cast", Dt("float32"), "x")


def test_isdtype():
    kinds = ["bool", "signed integer", "unsigned integer", "integral", "real floating", "complex floating",
             "numeric"]
    for d in ALL:
        for k in kinds:
            same("isdtype", Dt(d), k)
        same("isdtype", Dt(d), Dt("float16"))
        same("isdtype", Dt(d), ("bool", Dt("int8"), "complex floating"))
    same_error("isdtype", Dt("float16"), "foo")
    same_error("isdtype", Dt("float16"), 3)
    same_error("isdtype", Dt("float16"), ("bool", 3))
    same_error("isdtype", np.ones(2, np.float32), "numeric")
    same_error(lambda m: m.isdtype(m.float16, m.floating))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "complex64"])
def test_finfo(dtype):
    got, want = ax.finfo(getattr(ax, dtype)), mlx_core.finfo(getattr(mlx_core, dtype))
    for field in ["bits", "eps", "max", "min", "smallest_normal"]:
        assert getattr(got, field) == getattr(want, field), field
        assert type(getattr(got, field)) is type(getattr(want, field)), field
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    assert repr(got) == repr(want)


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64"])
def test_iinfo(dtype):
    got, want = ax.iinfo(getattr(ax, dtype)), mlx_core.iinfo(getattr(mlx_core, dtype))
    assert (got.min, got.max) == (want.min, want.max)
    assert type(got.max) is int
    assert str(got.dtype).split(".")[-1] == dtype
    assert repr(got) == repr(want)


def test_info_errors():
    for d in ["int32", "bool_", "uint8"]:
        same_error("finfo", Dt(d))
    for d in ["float32", "bool_", "complex64"]:
        same_error("iinfo", Dt(d))
    same_error("finfo", np.ones(2, np.float32))
    same_error("iinfo", np.ones(2, np.int8))


def test_asarray_astype(rng):
    x = random_array(rng, (3, 4), "float32")
    same("asarray", x)
    same("asarray", x, Dt("int32"))
    same("asarray", [[1, 2], [3, 4]])
    same("asarray", 3.0, dtype=Dt("float16"))
    same("asarray", x, copy=True)
    same("asarray", [1, 2], copy=None)
    same_error("asarray", x, copy=False)
    same_error("asarray", [1, 2], copy=False)
    same_error(lambda m: m.asarray(x, copy=False))
    same("astype", x, Dt("int8"))
    same(lambda m, a: m.astype(a.T, m.bfloat16), x)


def test_a_dtype_argument_takes_only_dtypes(rng):
    # MLX's Dtype is a class: an int (a dtype's index), a string or a numpy
    # type is a TypeError wherever a Dtype goes.
    x = random_array(rng, (3,), "float32")
    for bad in (5, 0, "float32", np.float32, 1.0):
        same_error("astype", x, bad)
        same_error(lambda m, a, d=bad: a.astype(d), x)
        same_error("zeros", (2,), bad)
        same_error("ones", (2,), dtype=bad)
        same_error("full", (2,), 1.0, bad)
        same_error("arange", 3, dtype=bad)
        same_error("view", x, bad)
        same_error(lambda m, d=bad: m.eye(2, dtype=d))
        same_error(lambda m, d=bad: m.random.normal((2,), dtype=d))
    same_error(lambda m: m.finfo(5))


def test_a_dtype_of_none_is_the_functions_default(rng):
    x = random_array(rng, (2, 3), "int16")
    same("zeros", (2, 3), None)
    same("ones", 4, dtype=None)
    same("empty", (2,), None)
    same("zeros_like", x, None)
    same("ones_like", x, dtype=None)
    same("zeros_like", x, Dt("float16"))
    same("ones_like", x, Dt("bool_"))
    same("empty_like", x, None)
    same("full_like", x, 3, None)
    same("linspace", 0, 1, 5, True, None)
    same("eye", 3, dtype=None)
    same("identity", 2, None)
    same("arange", 3, dtype=None)
    # Random functions: the shape and dtype their default gives.
    for fn in (lambda m: m.random.normal((2,), dtype=None), lambda m: m.random.uniform(shape=(2,), dtype=None),
               lambda m: m.random.randint(0, 5, (2,), dtype=None), lambda m: m.random.gumbel((2,), dtype=None),
               lambda m: m.random.truncated_normal(-1, 1, (2,), dtype=None),
               lambda m: m.random.laplace((2,), dtype=None)):
        same(lambda m, fn=fn: m.zeros_like(fn(m)))


def test_positional_forms_mlx_accepts(rng):
    # linspace(start, stop, num, endpoint, dtype)
    same("linspace", 0, 1, 5, False)
    same("linspace", -2.5, 7, 9, False, Dt("float16"))
    same("linspace", 3, -1, 4, endpoint=False)
    same("linspace", 0, 1, 1, False)
    same("linspace", 0, 1, 0, False)
    # arange(stop, step, dtype), all positional: MLX's second overload.
    same("arange", 1, 7, Dt("float16"))
    same("arange", 3, 7.5, Dt("float32"))
    same("arange", 1.0, 2, 0.5, Dt("float16"))
    x = rng.integers(-2, 3, size=(3, 5)).astype(np.int32)  # zeros among them
    same("count_nonzero", x, -1)
    same("count_nonzero", x, (0, 1))
    same("count_nonzero", x, 0, keepdims=True)
    same_error("count_nonzero", x, 0, True)  # keepdims is keyword-only
    same(lambda m: m.stack([m.array(x), m.array(x)], None))
    same(lambda m: m.stack([m.array(x), m.array(x)], axis=None))


CATEGORIES = ["complexfloating", "floating", "inexact", "signedinteger", "unsignedinteger", "integer", "number",
              "generic"]


def test_issubdtype_every_pair_of_dtypes_and_categories():
    kinds = ALL + CATEGORIES
    for a in kinds:
        for b in kinds:
            same(lambda m, a=a, b=b: m.issubdtype(getattr(m, a), getattr(m, b)))
    # Anything else on either side is MLX's ValueError (an int was once
    # taken as the category of that value).
    for bad in (5, 0, "float32", None):
        same_error(lambda m, d=bad: m.issubdtype(m.float32, d))
        same_error(lambda m, d=bad: m.issubdtype(d, m.floating))
        same_error(lambda m, d=bad: m.issubdtype(m.integer, d))


def test_empty_and_empty_like(rng):
    same("empty", 3)
    same("empty", (2, 3), Dt("int8"))
    same("empty", (0, 2), dtype=Dt("float16"))
    x = random_array(rng, (2, 5), "int16")
    same("empty_like", x)
    same("empty_like", x, Dt("float32"))
    same("empty_like", x, dtype=Dt("bool_"))


# ---- view

@pytest.mark.parametrize("src,dst", [("float32", "int32"), ("float32", "uint8"), ("int8", "int16"),
                                     ("uint8", "float32"), ("float16", "bfloat16"), ("int64", "float16"),
                                     ("complex64", "float32"), ("float32", "complex64"), ("bool", "int8")])
def test_view(rng, src, dst):
    x = random_array(rng, (3, 8), src)
    same("view", x, Dt(dst))
    same(lambda m, a: a.view(getattr(m, dst)), x)
    # Non-contiguous inputs regroup the bytes of the row-major elements.
    same(lambda m, a: m.view(a.T, getattr(m, dst)), random_array(rng, (8, 4), src))
    same(lambda m, a: m.view(a[:, 2:6], getattr(m, dst)), x)
    same(lambda m, a: m.view(m.broadcast_to(a, (3, 8)), getattr(m, dst)), random_array(rng, (8,), src))


def test_view_offsets_and_edges(rng):
    x = random_array(rng, (4, 8), "int8")
    # A slice starting mid-element of the wider dtype.
    same(lambda m, a: m.view(a[:, 1:3], m.int16), x)
    same(lambda m, a: m.view(a[1:], m.int32), x)
    same(lambda m, a: m.view(a.reshape(-1)[1:9], m.int64), x)
    same("view", np.array(1.5, np.float32), Dt("int32"))
    same("view", 3, Dt("float32"))
    same("view", np.zeros((2, 0), np.float32), Dt("int8"))
    same("view", x, Dt("int8"))
    same(lambda m, a: m.view(a, m.int16) + 1, x)  # the view feeds further ops


def test_view_errors():
    same_error("view", np.array(1.0, np.float32), Dt("int16"))
    same_error("view", np.ones(3, np.int8), Dt("int16"))
    same_error("view", np.ones((2, 6), np.int16), Dt("float64"))


# ---- as_strided

def test_as_strided(rng):
    x = random_array(rng, (12,), "float32")
    same("as_strided", x)
    same("as_strided", x, (3, 4))
    same("as_strided", x, (5, 3), (2, 1))
    same("as_strided", x, (2, 2), (-1, 1), 3)
    same("as_strided", x, shape=(4,), strides=(0,), offset=5)
    same("as_strided", x, (3, 3), (1, 1), offset=2)
    same("as_strided", x, strides=(1,))
    same("as_strided", x, (0, 3), (1, 1))
    y = random_array(rng, (3, 4), "int32")
    # Strides count the row-major elements whatever the input's layout.
    same(lambda m, a: m.as_strided(a.T, (4, 2), (1, 3)), y)
    # MLX's own eval rejects this input (its reshape leaves it strided), against
    # its documented contract; Alloy copies it, so MLX sees the copy.
    same(lambda m, a: m.as_strided(a[:, ::2] if m is ax else m.array(np.ascontiguousarray(np.array(a)[:, ::2])), (3, 2), (2, 1)), y)
    same(lambda m, a: m.as_strided(m.broadcast_to(a[0], (3, 4)), (6,), (2,)), y)
    same(lambda m, a: m.as_strided(a, (2, 2), (4, 1), 1) * 2, y)


def test_as_strided_errors():
    x = np.arange(6, dtype=np.float32)
    same_error("as_strided", x, (2, -2), (1, 1))
    same_error("as_strided", x, (2, 2), (1, 1), -1)


def test_as_strided_grad(rng):
    x = random_array(rng, (3, 4), "float32")
    w = random_array(rng, (3, 3), "float32")

    def f(m):
        return lambda a: (m.as_strided(a, (3, 3), (2, 1), 1) * m.array(w)).sum()

    got = ax.grad(f(ax))(ax.array(x))
    want = mlx_core.grad(f(mlx_core))(mlx_core.array(x))
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-6)



@pytest.mark.parametrize("dtype", ["uint8", "uint16", "uint32", "int8", "int16", "int32", "int64"])
def test_python_int_that_the_dtype_cannot_hold(rng, dtype):
    """A Python int beside an integer array (or filling one) that a dtype of
    under 8 bytes cannot hold is a ValueError in MLX; one it holds is fine.
    64-bit dtypes wrap instead. Same in Alloy, value for value."""
    info = np.iinfo(dtype)
    x = random_array(rng, (3,), dtype)
    beyond = [int(info.max) + 1, int(info.min) - 1] if info.bits < 64 else []
    within = [int(info.max), int(info.min), int(rng.integers(-100, 100)) % int(info.max)]
    exprs = [lambda m, a, v: a + v, lambda m, a, v: a * v, lambda m, a, v: m.maximum(a, v),
             lambda m, a, v: m.where(a > 0, a, v), lambda m, a, v: m.full((2,), v, dtype=a.dtype)]
    for expr in exprs:
        for v in beyond:
            error = same_error(expr, x, v)
            assert "overflow" in str(error), error
        for v in within:
            same(expr, x, v)
    assert ax.array(int(info.max) + 1 if info.bits < 64 else 0, dtype=getattr(ax, dtype)).item() == \
        mlx_core.array(int(info.max) + 1 if info.bits < 64 else 0, dtype=getattr(mlx_core, dtype)).item()
