"""Shape ops against numpy: reshape, transpose & co, concatenate/stack/split,
pad, tile, repeat; views share memory; errors name the problem."""
import ml_dtypes
import numpy as np
import pytest

import alloy.core as mx
from mlx_oracle import same, same_error


def to_mx(x):
    """mx.array keeping float64 (plain conversion turns numpy float64 into float32, as MLX)."""
    return mx.array(x, dtype=mx.float64) if x.dtype == np.float64 else mx.array(x)

ALL_DTYPES = ["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
              "float16", "bfloat16", "float32", "float64", "complex64"]


def np_dtype(name):
    return ml_dtypes.bfloat16 if name == "bfloat16" else np.dtype(name)


def random_array(rng, shape, name="float32"):
    if name == "bool":
        return rng.random(shape) < 0.5
    if name.startswith("uint") or name.startswith("int"):
        return rng.integers(0, 100, size=shape).astype(name)
    if name == "complex64":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
    return rng.standard_normal(shape).astype(np_dtype(name))


def check(out, expected):
    got = np.array(out)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_array_equal(got, expected)


def evaluated(x):
    # `* 1` makes the data resident on the default device (a GPU array is
    # otherwise a host array copied to the GPU when first used there).
    a = mx.array(x)
    a = a * 1 if a.dtype != mx.bool_ else a
    mx.eval(a)
    return a


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_reshape_every_dtype(rng, dtype):
    x = random_array(rng, (2, 3, 4), dtype)
    a = to_mx(x)
    check(mx.reshape(a, (4, -1)), x.reshape(4, -1))
    check(a.reshape(6, 4), x.reshape(6, 4))
    check(a.reshape((24,)), x.reshape(24))
    check(mx.transpose(a, (2, 0, 1)), x.transpose(2, 0, 1))


@pytest.mark.parametrize("shape,new", [((), (1, 1)), ((1,), ()), ((0, 3), (3, 0, 5 // 5)), ((2, 3, 4), (-1,)),
                                       ((6,), (2, 3)), ((2, 1, 3), (3, 2))])
def test_reshape_shapes(rng, shape, new):
    x = random_array(rng, shape)
    check(mx.reshape(mx.array(x), new), x.reshape(new))


def test_reshape_of_non_contiguous_views(rng):
    x = random_array(rng, (4, 6, 5))
    a = mx.array(x)
    check(a.T.reshape(-1), x.T.reshape(-1))
    check(a[::2, ::-1].reshape(2, 30), x[::2, ::-1].reshape(2, 30))
    check(a[:, 1:4].reshape(4, 3, 5), x[:, 1:4].reshape(4, 3, 5))  # view (no merge across the gap)
    check(mx.broadcast_to(a[:1], (3, 6, 5)).reshape(18, 5), np.broadcast_to(x[:1], (3, 6, 5)).reshape(18, 5))


def test_transpose_swap_move(rng):
    x = random_array(rng, (2, 3, 4, 5))
    a = mx.array(x)
    check(mx.transpose(a), x.transpose())
    check(a.T, x.T)
    check(a.transpose(1, 0, 3, 2), x.transpose(1, 0, 3, 2))
    check(mx.transpose(a, [-1, 0, 1, 2]), x.transpose(3, 0, 1, 2))
    check(mx.swapaxes(a, 0, -1), np.swapaxes(x, 0, -1))
    check(a.swapaxes(1, 2), np.swapaxes(x, 1, 2))
    check(mx.moveaxis(a, 0, -1), np.moveaxis(x, 0, -1))
    check(a.moveaxis(-1, 1), np.moveaxis(x, -1, 1))


def test_flatten_expand_squeeze(rng):
    x = random_array(rng, (2, 1, 3, 1))
    a = mx.array(x)
    check(mx.flatten(a), x.reshape(-1))
    check(a.flatten(1, 2), x.reshape(2, 3, 1))
    check(mx.flatten(mx.array(np.float32(3))), np.array([3], np.float32))
    check(mx.expand_dims(a, 0), np.expand_dims(x, 0))
    check(mx.expand_dims(a, (0, -1)), np.expand_dims(x, (0, -1)))
    check(mx.squeeze(a), np.squeeze(x))
    check(a.squeeze(1), np.squeeze(x, 1))
    check(mx.squeeze(a, (1, 3)), np.squeeze(x, (1, 3)))


def test_broadcast_to(rng):
    x = random_array(rng, (3, 1))
    check(mx.broadcast_to(mx.array(x), (2, 3, 4)), np.broadcast_to(x, (2, 3, 4)))
    a, b = mx.broadcast_arrays(mx.array(x), mx.zeros((4,)))
    assert a.shape == b.shape == (3, 4)


@pytest.mark.parametrize("dtype", ["bool", "int8", "int64", "float16", "bfloat16", "float32", "complex64"])
def test_concatenate_stack_split(rng, dtype):
    xs = [random_array(rng, (2, n, 3), dtype) for n in (1, 4, 0, 2)]
    arrs = [to_mx(x) for x in xs]
    check(mx.concatenate(arrs, axis=1), np.concatenate(xs, axis=1))
    check(mx.concatenate(arrs, axis=-2), np.concatenate(xs, axis=-2))
    check(mx.concatenate(arrs, axis=None), np.concatenate(xs, axis=None))
    ys = [random_array(rng, (2, 3), dtype) for _ in range(3)]
    for axis in (0, 1, 2, -1):
        check(mx.stack([mx.array(y) for y in ys], axis=axis), np.stack(ys, axis=axis))
    z = random_array(rng, (6, 4), dtype)
    for got, want in zip(mx.split(mx.array(z), 3), np.split(z, 3)):
        check(got, want)
    for got, want in zip(mx.split(mx.array(z), [1, 3, 10], axis=0), np.split(z, [1, 3, 10], axis=0)):
        check(got, want)
    for got, want in zip(mx.array(z).split(2, axis=1), np.split(z, 2, axis=1)):
        check(got, want)


def test_concatenate_promotes_dtypes():
    out = mx.concatenate([mx.array([1, 2], dtype=mx.int8), mx.array([0.5], dtype=mx.float32)])
    assert out.dtype == mx.float32
    np.testing.assert_array_equal(np.array(out), [1, 2, 0.5])


def test_pad(rng):
    x = random_array(rng, (2, 3))
    a = mx.array(x)
    check(mx.pad(a, 1), np.pad(x, 1))
    check(mx.pad(a, ((1, 2), (0, 3)), constant_values=2.5), np.pad(x, ((1, 2), (0, 3)), constant_values=2.5))
    check(mx.pad(a, (2, 1), mode="edge"), np.pad(x, (2, 1), mode="edge"))
    check(mx.pad(a, [(0, 0), (3, 1)], mode="edge"), np.pad(x, [(0, 0), (3, 1)], mode="edge"))
    i = np.arange(6, dtype=np.int32).reshape(2, 3)
    check(mx.pad(mx.array(i), 1, constant_values=-1), np.pad(i, 1, constant_values=-1))


@pytest.mark.parametrize("mode", ["reflect", "symmetric"])
def test_pad_mirror_modes(rng, mode):
    x = random_array(rng, (3, 4))
    a = mx.array(x)
    # Widths within the axis and wider than it (numpy keeps mirroring).
    for widths in [1, (2, 1), ((1, 2), (3, 0)), ((0, 0), (5, 9)), ((4, 7), (0, 2))]:
        check(mx.pad(a, widths, mode=mode), np.pad(x, widths, mode=mode))
        same(lambda m, v, w=widths: m.pad(v, w, mode=mode), x)
    check(mx.pad(mx.array(x[:1]), ((3, 2), (0, 0)), mode=mode), np.pad(x[:1], ((3, 2), (0, 0)), mode=mode))
    same(lambda m, v: m.pad(v, 2, mode=mode), np.arange(5, dtype=np.int32))
    same_error(lambda m, v: m.pad(v, 1, mode=mode), np.zeros((0, 3), np.float32))
    # The gradient gathers the mirrored cotangents back.
    cot = random_array(rng, (3 + 3, 4 + 5))
    got = mx.grad(lambda v: (mx.pad(v, ((1, 2), (2, 3)), mode=mode) * mx.array(cot)).sum())(a)
    want = np.zeros_like(x, dtype=np.float64)
    rows = np.pad(np.arange(3), (1, 2), mode=mode)
    cols = np.pad(np.arange(4), (2, 3), mode=mode)
    np.add.at(want, (rows[:, None], cols[None, :]), cot)
    np.testing.assert_allclose(np.array(got), want, rtol=1e-5, atol=1e-6)


def test_flatten_clamps_axes_as_mlx():
    x = np.zeros((2, 3, 4), np.float32)
    for start, end in [(-4, -2), (0, 5), (-5, 1), (1, -1), (0, 0)]:
        same(lambda m, v, st=start, en=end: m.flatten(v, st, en), x)
    for start, end in [(3, 2), (2, 1), (1, 0)]:
        same_error(lambda m, v, st=start, en=end: m.flatten(v, st, en), x)


def test_tile_repeat(rng):
    x = random_array(rng, (2, 3))
    a = mx.array(x)
    for reps in (2, (2, 1), (1, 3), (2, 2, 2), (0, 1)):
        check(mx.tile(a, reps), np.tile(x, reps))
    check(mx.repeat(a, 3, axis=1), np.repeat(x, 3, axis=1))
    check(mx.repeat(a, 2, axis=0), np.repeat(x, 2, axis=0))
    check(mx.repeat(a, 2), np.repeat(x, 2))
    check(mx.repeat(a, 0, axis=1), np.repeat(x, 0, axis=1))


# ---- views share memory


def test_views_do_not_allocate(rng):
    a = evaluated(random_array(rng, (64, 32, 8)))
    views = []
    before = mx.get_active_memory()
    views.append(a.T)
    views.append(mx.transpose(a, (1, 0, 2)))
    views.append(a.reshape(64, 256))
    views.append(mx.expand_dims(a, 1))
    views.append(mx.squeeze(mx.expand_dims(a, 0)))
    views.append(mx.broadcast_to(a[:, :1], (64, 1000, 8)))
    views.append(a[::2, ::-3, 1:7])
    views.append(a[:, 3])
    views.append(a.swapaxes(0, 2).reshape(8, 32, 64))  # splitting/merging no axes across strides
    mx.eval(views)
    assert mx.get_active_memory() == before
    # and the results are right
    x = np.array(a)
    check(views[6], x[::2, ::-3, 1:7])
    check(views[8], x.swapaxes(0, 2).reshape(8, 32, 64))


def test_reshape_of_transpose_copies(rng):
    a = evaluated(random_array(rng, (64, 32)))
    before = mx.get_active_memory()
    flat = a.T.reshape(-1)
    mx.eval(flat)
    assert mx.get_active_memory() >= before + flat.nbytes
    np.testing.assert_array_equal(np.array(flat), np.array(a).T.reshape(-1))


# ---- errors


def test_errors():
    a = mx.zeros((2, 3))
    with pytest.raises(ValueError, match=r"\[reshape\]"):
        mx.reshape(a, (4, 2))
    with pytest.raises(ValueError, match=r"\[reshape\]"):
        mx.reshape(a, (-1, -1))
    with pytest.raises(ValueError, match=r"\[reshape\]"):
        a.reshape(-1, 4)
    with pytest.raises((ValueError, IndexError), match=r"\[transpose\]"):
        mx.transpose(a, (0, 2))
    with pytest.raises((ValueError, IndexError), match=r"\[expand_dims\]"):
        mx.expand_dims(a, 4)
    with pytest.raises(ValueError, match=r"\[squeeze\]"):
        mx.squeeze(a, 0)
    with pytest.raises(ValueError, match=r"\[concatenate\]"):
        mx.concatenate([a, mx.zeros((2, 4))], axis=0)
    with pytest.raises(ValueError, match=r"\[concatenate\]"):
        mx.concatenate([a, mx.zeros((2,))])
    with pytest.raises(ValueError, match=r"\[stack\]"):
        mx.stack([a, mx.zeros((3, 2))])
    with pytest.raises(ValueError, match=r"\[split\]"):
        mx.split(a, 2, axis=1)
    with pytest.raises(ValueError, match=r"\[pad\]"):
        mx.pad(a, 1, mode="wrap")
    with pytest.raises(ValueError, match=r"\[broadcast"):
        mx.broadcast_to(a, (3, 3))


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


@pytest.mark.parametrize("name,f,shapes", [
    ("reshape", lambda a: a.reshape(6, 2), [(3, 4)]),
    ("reshape-copy", lambda a: a.T.reshape(-1), [(3, 4)]),
    ("transpose", lambda a: mx.transpose(a, (2, 0, 1)), [(2, 3, 4)]),
    ("moveaxis", lambda a: mx.moveaxis(a, 0, -1), [(2, 3, 4)]),
    ("expand+squeeze", lambda a: mx.squeeze(mx.expand_dims(a, (0, 2)), 0), [(3, 4)]),
    ("broadcast", lambda a: mx.broadcast_to(a, (2, 3, 4)), [(3, 1)]),
    ("concatenate", lambda a, b: mx.concatenate([a, b, a], axis=1), [(2, 3), (2, 1)]),
    ("stack", lambda a, b: mx.stack([a, b], axis=-1), [(2, 3), (2, 3)]),
    ("split", lambda a: mx.split(a, [1, 3], axis=1)[1], [(2, 5)]),
    ("pad", lambda a: mx.pad(a, ((1, 0), (2, 3))), [(2, 3)]),
    ("pad-edge", lambda a: mx.pad(a, 2, mode="edge"), [(2, 3)]),
    ("tile", lambda a: mx.tile(a, (2, 3)), [(2, 3)]),
    ("repeat", lambda a: mx.repeat(a, 3, axis=0), [(2, 3)]),
    ("full", lambda a: mx.full((4, 3), a), [(3,)]),
])
def test_shape_derivatives(rng, name, f, shapes):
    check_linear_derivatives(rng, f, shapes)
