"""numpy round trips for every dtype (bfloat16 through ml_dtypes) and DLPack
export (shared memory, strides, lifetime)."""
import gc

import ml_dtypes
import numpy as np
import pytest

import alloy.core as mx


def to_mx(x):
    """mx.array keeping float64 (plain conversion turns numpy float64 into float32, as MLX)."""
    return mx.array(x, dtype=mx.float64) if x.dtype == np.float64 else mx.array(x)

ALL_DTYPES = ["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
              "float16", "bfloat16", "float32", "float64", "complex64"]


def np_dtype(name):
    return ml_dtypes.bfloat16 if name == "bfloat16" else np.dtype(name)


def random_array(rng, shape, name):
    if name == "bool":
        return rng.random(shape) < 0.5
    if name.startswith("uint") or name.startswith("int"):
        info = np.iinfo(name)
        return rng.integers(info.min, info.max, size=shape, dtype=name, endpoint=True)
    if name == "complex64":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
    return (rng.standard_normal(shape) * 100).astype(np_dtype(name))



@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [pytest.param((), id="0d"), (0,), (3,), (2, 3, 4)])
def test_numpy_round_trip(rng, dtype, shape, request):
    x = random_array(rng, shape, dtype)
    a = mx.array(x, dtype=mx.bool_ if dtype == "bool" else getattr(mx, dtype))
    assert a.shape == x.shape
    back = np.array(a)
    assert back.dtype == x.dtype
    np.testing.assert_array_equal(back.view(np.uint16) if dtype == "bfloat16" else back,
                                  x.view(np.uint16) if dtype == "bfloat16" else x)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_round_trip_of_strided_views(rng, dtype):
    x = random_array(rng, (5, 6), dtype)
    a = to_mx(x)
    np.testing.assert_array_equal(np.array(a[::-2, 1::2]).astype(np.float64 if dtype == "bfloat16" else x.dtype),
                                  x[::-2, 1::2].astype(np.float64 if dtype == "bfloat16" else x.dtype))
    np.testing.assert_array_equal(np.array(a.T), x.T)


DLPACK_DTYPES = [d for d in ALL_DTYPES if d != "bfloat16"]  # numpy has no DLPack bfloat16


@pytest.mark.parametrize("dtype", DLPACK_DTYPES)
def test_dlpack_to_numpy(rng, dtype):
    x = random_array(rng, (4, 5), dtype)
    a = to_mx(x)
    y = np.from_dlpack(a)
    assert y.dtype == x.dtype and y.shape == x.shape
    np.testing.assert_array_equal(y, x)
    assert a.__dlpack_device__() == (1, 0)


def test_dlpack_shares_memory_and_strides(rng):
    x = rng.standard_normal((6, 8)).astype(np.float32)
    a = mx.array(x)
    v = a[::2, ::-1]
    y = np.from_dlpack(v)
    np.testing.assert_array_equal(y, x[::2, ::-1])
    assert y.strides == (2 * 8 * 4, -4)
    # the same memory twice -> the same address
    assert np.from_dlpack(a).__array_interface__["data"][0] == np.from_dlpack(a).__array_interface__["data"][0]
    assert not y.flags.writeable


def test_dlpack_keeps_the_memory_alive(rng):
    x = rng.standard_normal((256, 256)).astype(np.float32)
    a = mx.array(x)
    y = np.from_dlpack(a)
    del a
    gc.collect()
    junk = [mx.ones((256, 256)) for _ in range(4)]
    mx.eval(junk)
    np.testing.assert_array_equal(y, x)


def test_dlpack_copy_and_lazy(rng):
    a = mx.arange(6).reshape(2, 3)  # lazy: evaluated by the export
    np.testing.assert_array_equal(np.from_dlpack(a), np.arange(6).reshape(2, 3))
    c = a.__dlpack__(copy=True)
    assert c is not None


def test_dlpack_import_from_numpy(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_array_equal(np.array(mx.array(x)), x)


def test_torch_if_installed(rng):
    torch = pytest.importorskip("torch")  # not installed here: DLPack is checked with numpy above
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    a = mx.array(t)
    np.testing.assert_array_equal(np.array(a), t.numpy())
    back = torch.from_dlpack(a)
    assert torch.equal(back, t)


def test_buffer_protocol_objects_convert_as_in_mlx(rng):
    # vmlx packs its kernels' parameters with struct and passes a memoryview;
    # bytes and array.array take the same path. Against real MLX: values,
    # dtypes and shapes.
    import array
    import struct

    import mlx.core as real

    ints = rng.integers(-1000, 1000, 3)
    packed = struct.pack("<3if", *ints.tolist(), float(rng.standard_normal()))
    floats = array.array("f", rng.standard_normal(5).astype(np.float32).tolist())
    cases = [(memoryview(packed), None), (memoryview(packed), "uint8"), (packed, None),
             (memoryview(packed)[:12].cast("i"), None), (floats, None), (memoryview(floats), "float16"),
             (array.array("h", ints.tolist()), None)]
    for obj, dtype in cases:
        kw = {} if dtype is None else {"dtype": getattr(mx, dtype)}
        want = real.array(obj, **({} if dtype is None else {"dtype": getattr(real, dtype)}))
        got = mx.array(obj, **kw)
        assert got.shape == want.shape and str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], (
            obj, got, want)
        np.testing.assert_array_equal(np.array(got), np.array(want))
