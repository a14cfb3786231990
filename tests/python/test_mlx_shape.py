"""Shape composites against real MLX: atleast_*, flip, roll, tri/tril/triu,
diag/diagonal/trace, meshgrid, unflatten, unstack, permute_dims,
matrix_transpose, broadcast_shapes, diff, and the dynamic slice / slice_update."""
import numpy as np
import pytest

import alloy.core as mx
from mlx_oracle import Dt, random_array, same, same_error

DTYPES = ["float32", "float16", "int32", "bool"]


# ---- rank and axes

@pytest.mark.parametrize("name", ["atleast_1d", "atleast_2d", "atleast_3d"])
def test_atleast(rng, name):
    xs = [random_array(rng, s) for s in [(), (3,), (2, 3), (2, 3, 4), (0, 2)]]
    for x in xs:
        same(name, x)
    same(name, *xs)  # several arrays: a list
    same(lambda m: getattr(m, name)())
    same(lambda m, x: getattr(m, name)(x.T, stream=m.cpu), xs[2])


def test_permute_dims_and_matrix_transpose(rng):
    x = random_array(rng, (2, 3, 4), "int32")
    same("permute_dims", x)
    same("permute_dims", x, (2, 0, 1))
    same("permute_dims", x, axes=[-1, 0, 1])
    same("matrix_transpose", x)
    same(lambda m, a: m.matrix_transpose(a[:, ::2]), x)
    same(lambda m, a: a.mT, x)
    same_error("permute_dims", x, (0, 0, 1))
    same_error("matrix_transpose", random_array(rng, (3,)))
    same_error("matrix_transpose", random_array(rng, ()))


def test_unflatten(rng):
    x = random_array(rng, (3, 12), "float16")
    same("unflatten", x, 1, (3, 4))
    same("unflatten", x, -1, (2, -1, 3))
    same("unflatten", x, 0, (3,))
    same("unflatten", random_array(rng, (0,)), 0, (2, -1))
    same_error("unflatten", x, 1, (5, -1))
    same_error("unflatten", x, 1, (-1, -1))
    same_error("unflatten", x, 2, (2, 6))
    same_error("unflatten", x, 1, ())
    same_error("unflatten", random_array(rng, ()), 0, (1,))
    # MLX divides by zero here; a clear error is the defined answer.
    with pytest.raises(ValueError, match="unflatten"):
        mx.unflatten(mx.zeros((0,)), 0, (0, -1))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_unstack(rng, axis):
    x = random_array(rng, (2, 3, 4), "int32")
    got, _ = same("unstack", x, axis=axis)
    assert isinstance(got, tuple)
    same("unstack", random_array(rng, (0, 2)))
    same_error("unstack", x, axis=3)
    same_error("unstack", random_array(rng, ()))


def test_broadcast_shapes():
    same("broadcast_shapes", (1,), (3, 1))
    same("broadcast_shapes", (6, 7), (5, 6, 1), (7,))
    same("broadcast_shapes", [2, 1], [0])
    same("broadcast_shapes", (), (2,))
    same("broadcast_shapes", (2, 3))
    same_error("broadcast_shapes")
    same_error("broadcast_shapes", (2,), (3,))


def test_meshgrid(rng):
    x, y, z = (random_array(rng, s) for s in [(3,), (2,), (4,)])
    for indexing in ["xy", "ij"]:
        for sparse in [False, True]:
            same("meshgrid", x, y, sparse=sparse, indexing=indexing)
            same("meshgrid", x, y, z, sparse=sparse, indexing=indexing)
    same("meshgrid", x)
    same("meshgrid")
    same("meshgrid", random_array(rng, (), "int32"), random_array(rng, (2, 3), "int32"))
    same_error("meshgrid", x, y, indexing="ab")


# ---- reordering

@pytest.mark.parametrize("dtype", DTYPES)
def test_flip(rng, dtype):
    x = random_array(rng, (3, 4, 2), dtype)
    same("flip", x)
    same("flip", x, 1)
    same("flip", x, axis=(0, -1))
    same("flip", x, (0, 0))  # reversed once, as in MLX
    same("flip", x, ())
    same(lambda m, a: m.flip(m.transpose(a, (2, 0, 1)), -2), x)
    same("flip", np.asarray(random_array(rng, (), dtype)))
    same("flip", random_array(rng, (0, 3), dtype), 0)
    same_error("flip", x, 3)
    same_error("flip", x, -4)
    same_error("flip", random_array(rng, ()), 0)


@pytest.mark.parametrize("dtype", ["float32", "int8", "bool"])
def test_roll(rng, dtype):
    x = random_array(rng, (3, 4), dtype)
    same("roll", x, 1)
    same("roll", x, -5, 1)
    same("roll", x, (1, 2), (0, 1))
    same("roll", x, 7, (0, 1))
    same("roll", x, (1, 2), 0)  # one axis, the shifts add up
    same("roll", x, (1, 2))
    same("roll", x, (1, 2, 3), (0, -1))
    same("roll", x, 1, (0, 0))
    same("roll", x, shift=2)
    same(lambda m, a: m.roll(a[:, ::-2], 1, 1), x)
    same("roll", np.asarray(random_array(rng, (), dtype)), 1)
    same("roll", random_array(rng, (0, 3), dtype), 1, 0)
    same_error("roll", x, (1,), (0, 1))
    same_error("roll", x, 1, 2)
    same_error("roll", x, 1, -3)


@pytest.mark.parametrize("dtype", ["float32", "int32", "uint8", "bool"])
def test_diff(rng, dtype):
    x = random_array(rng, (3, 5), dtype)
    same("diff", x)
    same("diff", x, 2, 0)
    same("diff", x, n=0)
    same("diff", x, 7)
    same("diff", x, axis=-2)
    same(lambda m, a: m.diff(a.T), x)
    same("diff", random_array(rng, (0,), dtype))
    same_error("diff", x, -1)
    same_error("diff", x, axis=2)
    same_error("diff", random_array(rng, (), dtype))


# ---- triangles and diagonals

def test_tri():
    same("tri", 3)
    same("tri", 3, 4, 1)
    same("tri", 3, k=-1, dtype=Dt("int32"))
    same("tri", 4, m=2, dtype=Dt("bool_"))
    same("tri", 0)
    same("tri", -1)
    same("tri", 2, -1)


@pytest.mark.parametrize("name", ["tril", "triu"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_tril_triu(rng, name, dtype):
    x = random_array(rng, (2, 3, 4), dtype)
    for k in [0, 1, -2, 5, -5]:
        same(name, x, k)
    same(name, x, k=-1)
    same(lambda m, a: getattr(m, name)(m.swapaxes(a, 1, 2)), x)
    same(name, random_array(rng, (0, 3), dtype))
    same_error(name, random_array(rng, (3,), dtype))
    same_error(name, random_array(rng, (), dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_diag(rng, dtype):
    v = random_array(rng, (3,), dtype)
    a = random_array(rng, (3, 4), dtype)
    for k in [0, 1, -2, 10]:
        same("diag", v, k)
        same("diag", a, k)
        same(lambda m, x: x.diag(k=k), a)
    same("diag", random_array(rng, (0,), dtype), 2)
    same(lambda m, x: m.diag(x.T, 1), a)
    same_error("diag", random_array(rng, (2, 2, 2), dtype))
    same_error("diag", random_array(rng, (), dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_diagonal(rng, dtype):
    a = random_array(rng, (3, 4), dtype)
    b = random_array(rng, (2, 3, 4), dtype)
    for offset in [0, 1, -2, 5]:
        same("diagonal", a, offset)
        same("diagonal", b, offset, 2, 0)
    same("diagonal", a, 0, -1, -2)
    same("diagonal", b, offset=1, axis1=1, axis2=2)
    same(lambda m, x: x.diagonal(1, 0, 2), b)
    same(lambda m, x: m.diagonal(x[:, ::2, ::-1], 0, 1, 2), b)
    same_error("diagonal", a, 0, 0, 0)
    same_error("diagonal", a, 0, 0, 5)
    same_error("diagonal", random_array(rng, (3,), dtype))


def test_trace(rng):
    a = random_array(rng, (3, 4), "float32")
    ints = random_array(rng, (3, 4), "int8")
    same("trace", a)
    same("trace", a, 1)
    same("trace", a, -1, 1, 0)
    same("trace", a, 10)
    same("trace", ints)
    same("trace", ints, dtype=Dt("float16"))
    same("trace", random_array(rng, (3, 3), "bool"))
    same("trace", random_array(rng, (2, 3, 4), "float16"), 0, 1, 2)
    same_error("trace", random_array(rng, (3,)))
    same_error("trace", a, 0, 1, 1)


# ---- dynamic slices

@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_slice(rng, dtype):
    a = random_array(rng, (3, 4), dtype)
    start = lambda v, t="int32": np.array(v, dtype=t)  # noqa: E731
    same("slice", a, start(1), (0,), (1, 2))
    same("slice", a, start([1, 2]), (0, 1), (2, 2))
    same("slice", a, start([1, 0]), (1, 0), (2, 3))
    same("slice", a, start([1]), (-1,), (2, 2))
    same("slice", a, start([1], "uint8"), [0], [2, 2])
    same("slice", a, start([1], "int64"), [0], [2, 2])
    same("slice", a, start([], "int32"), (), (2, 2))
    same("slice", a, start_indices=start([1]), axes=[0], slice_size=[0, 4])
    same(lambda m, x, s: m.slice(x.T, s, (0,), (2, 3)), a, start([2]))
    same_error("slice", a, start([1]), (2,), (2, 2))
    same_error("slice", a, start([1]), (0,), (2,))
    same_error("slice", a, start([1]), (0,), (4, 2))
    same_error("slice", a, start([1, 1]), (0,), (2, 2))
    same_error("slice", a, start([1.5], "float32"), (0,), (2, 2))
    same_error("slice", a, start([True], "bool"), (0,), (2, 2))
    same_error("slice", a, start([[1]]), (0,), (2, 2))


def test_slice_clamps_starts():
    # MLX reads outside the array here; Alloy clamps the block inside it.
    a = mx.arange(12).reshape(3, 4)
    assert mx.slice(a, mx.array([2, 3]), (0, 1), (2, 2)).tolist() == [[6, 7], [10, 11]]
    assert mx.slice(a, mx.array([-1]), (0,), (1, 4)).tolist() == [[0, 1, 2, 3]]
    b = mx.slice_update(mx.zeros((3, 3), mx.int32), mx.ones((2, 3), mx.int32), mx.array([2]), (0,))
    assert b.tolist() == [[0, 0, 0], [1, 1, 1], [1, 1, 1]]


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_slice_update(rng, dtype):
    a = random_array(rng, (3, 4), dtype)
    start = lambda v, t="int32": np.array(v, dtype=t)  # noqa: E731
    same("slice_update", a, random_array(rng, (1, 2), dtype), start([1, 1]), (0, 1))
    same("slice_update", a, random_array(rng, (2, 2), dtype), start([0, 1]), (1, 0))
    same("slice_update", a, random_array(rng, (1, 4), dtype), start([2]), (0,))
    same("slice_update", a, random_array(rng, (3, 1), "float32"), start([3], "uint8"), (-1,))
    same("slice_update", a, random_array(rng, (2,), dtype), start([1]), (1,))  # broadcast over axis 0
    same("slice_update", a, random_array(rng, (), dtype), start([1]), (0,))
    same("slice_update", a, random_array(rng, (), dtype), start(1), (1,))
    same("slice_update", a, random_array(rng, (0, 4), dtype), start([1]), (0,))
    same(lambda m, x, u, s: m.slice_update(x.T, u, s, (0,)), a, random_array(rng, (1, 3), dtype), start([2]))
    same_error("slice_update", a, random_array(rng, (4, 4), dtype), start([0]), (0,))
    same_error("slice_update", a, random_array(rng, (1, 5), dtype), start([0]), (0,))
    same_error("slice_update", a, random_array(rng, (1, 4), dtype), start([1]), (2,))
    same_error("slice_update", a, random_array(rng, (1, 4), dtype), start([1, 1]), (0,))
    same_error("slice_update", a, random_array(rng, (1, 4), dtype), start([1.0], "float32"), (0,))
    same_error("slice_update", a, random_array(rng, (1, 4), dtype), start([[1]]), (0,))


# ---- gradients through the composites

@pytest.mark.parametrize("fn", [
    lambda m, x: (m.tril(x, -1) * m.arange(12.0).reshape(3, 4)).sum(),
    lambda m, x: (m.triu(x, 1) ** 2).sum(),
    lambda m, x: (m.diagonal(x, 1) * m.array([1.0, 2.0, 3.0])).sum(),
    lambda m, x: (m.roll(x, (1, -2), (0, 1)) * m.arange(12.0).reshape(3, 4)).sum(),
    lambda m, x: (m.flip(x, 1) * m.arange(12.0).reshape(3, 4)).sum(),
    lambda m, x: (m.diff(x, 2) ** 2).sum(),
    lambda m, x: m.trace(x, -1),
    lambda m, x: (m.slice(x, m.array([1, 1]), (0, 1), (2, 2)) ** 2).sum(),
    lambda m, x: (m.slice_update(x, m.ones((1, 4)) * 3, m.array([1]), (0,)) * x).sum(),
])
def test_gradients(rng, fn):
    x = random_array(rng, (3, 4))
    same(lambda m, a: m.grad(lambda t: fn(m, t))(a), x)
