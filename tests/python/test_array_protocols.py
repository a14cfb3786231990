"""mx.array's Python protocols beyond the ops, against real MLX: pickling
(multiprocessing, caches of Python objects), bytes(a), the buffer protocol
(memoryview, np.frombuffer, struct), a @ scalar, complex(a), +a, the
Python 2 division names MLX's array keeps, and the array API standard's
__array_namespace__, through which einops.array_api (as f5-tts-mlx calls it)
works on Alloy arrays."""
import pickle

import numpy as np
import pytest

import alloy.core as mx
import mlx.core as mlx_core

DTYPES = ["bool_", "uint8", "int16", "uint32", "int64", "float16", "bfloat16", "float32", "complex64"]


def values(rng, shape, dtype):
    x = rng.standard_normal(shape) * 4
    if dtype == "complex64":
        return (x + 1j * rng.standard_normal(shape)).astype(np.complex64)
    if dtype == "bool_":
        return x > 0
    return x.astype(np.float32) if "float" in dtype else np.abs(x).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_pickle_round_trip(rng, dtype):
    a = mx.array(values(rng, (3, 5), dtype)).astype(getattr(mx, dtype))
    for x in (a, a.T[1:], a[2, 3], mx.exp(a.astype(mx.float32)) if dtype != "complex64" else a * 2):
        y = pickle.loads(pickle.dumps(x))
        assert y.dtype == x.dtype and y.shape == x.shape
        assert bytes(y) == bytes(x)


def test_pickle_inside_python_objects_and_bad_state(rng):
    w = mx.array(rng.standard_normal((4, 4)).astype(np.float32))
    state = pickle.loads(pickle.dumps({"w": w, "steps": [w * 2, 3]}))
    np.testing.assert_array_equal(np.array(state["steps"][0]), np.array(w) * 2)
    # A truncated payload, as unpickling hands it to a fresh array.
    with pytest.raises(ValueError, match="needs 12 bytes, got 8"):
        mx.array.__new__(mx.array).__setstate__((b"\x00" * 8, (3,), "float32"))


@pytest.mark.parametrize("dtype", ["uint8", "int32", "float16", "float32", "complex64"])
def test_bytes_as_mlx(rng, dtype):
    x = values(rng, (4, 3), dtype)
    ours, theirs = mx.array(x), mlx_core.array(x)
    assert bytes(ours) == bytes(theirs)
    assert bytes(ours.T) == bytes(theirs.T)  # row-major order of the view


def test_scalar_conversions_and_operator_names(rng):
    z = complex(*rng.standard_normal(2))
    for make in (mx.array, mlx_core.array):
        assert complex(make(z)) == pytest.approx(complex(np.complex64(z)))
    assert complex(mx.array(3)) == 3 + 0j
    with pytest.raises(ValueError):
        complex(mx.array([1.0, 2.0]))
    x = rng.standard_normal(5).astype(np.float32) + 3
    a = mx.array(x)
    assert (+a).tolist() == a.tolist()
    np.testing.assert_array_equal(np.array(a.__div__(2)), np.array(mlx_core.array(x).__div__(2)))
    np.testing.assert_array_equal(np.array(a.__rdiv__(2)), np.array(mlx_core.array(x).__rdiv__(2)))


def test_array_api_namespace_and_einops(rng):
    import einops.array_api as ea  # installed by `make test`

    assert mx.array(1).__array_namespace__() is mx
    with pytest.raises(ValueError):
        mx.array(1).__array_namespace__(api_version="2023.12")
    x = rng.standard_normal((2, 3, 4, 6)).astype(np.float32)
    calls = [
        lambda a: ea.rearrange(a, "b c h w -> b (h w) c"),
        lambda a: ea.repeat(a, "b c h w -> b c h w r", r=2),
        lambda a: ea.reduce(a, "b c h w -> b c", "mean"),
        lambda a: ea.reduce(a, "b c (h h2) w -> b c h w", "max", h2=2),
        lambda a: ea.pack([a, a], "b * w")[0],
        lambda a: ea.unpack(ea.rearrange(a, "b c h w -> b (c h) w"), [[3, 4]], "b * w")[0],
    ]
    for call in calls:
        got, want = call(mx.array(x)), call(mlx_core.array(x))
        assert got.shape == want.shape
        np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-5, atol=1e-6)  # mean sums in its own order


def on_cpu(values):
    # An array whose memory is host memory on every run (computed on the CPU).
    return mx.multiply(mx.array(values), 1, stream=mx.cpu)


# ---- the buffer protocol: memoryview, bytes, np.frombuffer, struct -----------

BUFFER_DTYPES = ["bool_", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "float16",
                 "float32", "float64", "complex64"]


def buffer_facts(mv):
    # memoryview.tolist reads only struct's codes (not "e" or "Zf"); tobytes reads any.
    elements = mv.tolist() if mv.format not in ("e", "Zf") else None
    return (mv.format, mv.itemsize, mv.ndim, mv.shape, mv.strides, mv.nbytes, mv.c_contiguous, elements, mv.tobytes())


@pytest.mark.parametrize("dtype", BUFFER_DTYPES)
def test_memoryview_is_mlx_s_buffer(rng, dtype):
    values = (rng.standard_normal((3, 4)) * 10).astype(np.float32)
    for make in (lambda m, v: v, lambda m, v: m.transpose(v), lambda m, v: v[1:, ::2],
                 lambda m, v: m.broadcast_to(v[:1], (3, 4)), lambda m, v: v[2, 3], lambda m, v: v[:0]):
        facts = []
        for m in (mlx_core, mx):
            with m.stream(m.cpu):  # host memory on every run, and views keep their strides
                a = make(m, m.array(values).astype(getattr(m, dtype)))
                facts.append(buffer_facts(memoryview(a)))
        assert facts[0] == facts[1]


def test_bytes_frombuffer_and_struct_read_the_elements(rng):
    values = rng.standard_normal(6).astype(np.float32)
    a = on_cpu(values)
    assert bytes(a) == values.tobytes()
    assert bytes(mx.transpose(on_cpu(values.reshape(2, 3)))) == values.reshape(2, 3).T.tobytes()
    np.testing.assert_array_equal(np.frombuffer(a, dtype=np.float32), values)
    import struct
    assert struct.unpack_from("<2f", a, 8) == tuple(float(v) for v in values[2:4])


def test_buffers_are_read_only_and_bfloat16_and_gpu_arrays_have_none(rng):
    a = on_cpu(rng.standard_normal(4).astype(np.float32))
    with pytest.raises(TypeError, match="read-only"):
        memoryview(a)[0] = 1.0
    b = mx.astype(a, mx.bfloat16, stream=mx.cpu)
    with pytest.raises(BufferError, match="bfloat16"):
        memoryview(b)
    assert str(np.array(b).dtype) == "bfloat16"  # numpy goes on to __array__
    assert memoryview(mx.view(b, mx.uint16, stream=mx.cpu)).format == "H"
    if mx.is_available(mx.gpu):
        g = mx.multiply(a, 1, stream=mx.gpu)
        with pytest.raises(BufferError, match="GPU memory"):
            memoryview(g)
        np.testing.assert_array_equal(np.array(g), np.array(a))


def test_matmul_with_a_python_scalar_is_a_type_error():
    for module in (mlx_core, mx):
        a = module.ones((2, 3))
        for bad in (2, 1.5, True):
            with pytest.raises(TypeError):
                a @ bad
            with pytest.raises(TypeError):
                bad @ a
        assert (a @ module.ones((3,))).shape == (2,)
