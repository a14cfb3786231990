"""mx.save / load / savez / savez_compressed / save_safetensors / save_gguf.

Every file Alloy writes is read back by numpy and by real MLX, and every file
MLX (or numpy) writes is read by Alloy, on fresh random values.
"""
import io
import zipfile

import ml_dtypes
import numpy as np
import pytest

import alloy.core as mx
import mlx.core as mlx_core
from mlx_oracle import random_array, to_numpy

NPY_DTYPES = ["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
              "float16", "bfloat16", "float32", "float64", "complex64"]
SAFETENSORS_DTYPES = [d for d in NPY_DTYPES if d != "float64"]  # MLX does not write float64 there
GGUF_DTYPES = ["float32", "float16", "int8", "int16", "int32"]


def alloy_array(x):
    if x.dtype == ml_dtypes.bfloat16:
        return mx.array(x.astype(np.float32)).astype(mx.bfloat16)
    if x.dtype == np.float64:  # mx.array narrows float64 input to float32 unless asked
        return mx.array(x, dtype=mx.float64)
    return mx.array(x)


def mlx_array(x):
    if x.dtype == ml_dtypes.bfloat16:
        return mlx_core.array(x.astype(np.float32)).astype(mlx_core.bfloat16)
    if x.dtype == np.float64:
        return mlx_core.array(x, dtype=mlx_core.float64)
    return mlx_core.array(x)


def assert_equal(got, want_np, dtype_name):
    """An array of either framework has exactly want_np's values and dtype."""
    assert str(got.dtype).split(".")[-1] == dtype_name
    assert tuple(got.shape) == want_np.shape
    want = want_np.astype(np.float32) if want_np.dtype == ml_dtypes.bfloat16 else want_np
    np.testing.assert_array_equal(to_numpy(got), want)


# ---- .npy

@pytest.mark.parametrize("dtype", NPY_DTYPES)
def test_npy_both_ways(tmp_path, rng, dtype):
    x = random_array(rng, (3, 4), dtype)
    mx.save(str(tmp_path / "a.npy"), alloy_array(x))
    assert_equal(mlx_core.load(str(tmp_path / "a.npy")), x, dtype)
    read = np.load(tmp_path / "a.npy")
    if dtype == "bfloat16":  # numpy has no bfloat16: MLX's '<V2' holds its bytes
        assert read.dtype == np.dtype("V2")
        read = read.view(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(read, x)

    mlx_core.save(str(tmp_path / "b.npy"), mlx_array(x))
    assert_equal(mx.load(str(tmp_path / "b.npy")), x, dtype)


@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 0, 3), (2, 3, 4)])
def test_npy_shapes_and_layouts(tmp_path, rng, shape):
    x = random_array(rng, shape, "float32")
    mx.save(tmp_path / "a.npy", mx.array(x))  # a pathlib.Path
    np.testing.assert_array_equal(np.load(tmp_path / "a.npy"), x)
    if len(shape) > 1:
        # A transposed (column-major) view is written in row-major order.
        mx.save(tmp_path / "t.npy", mx.array(x).T)
        np.testing.assert_array_equal(np.load(tmp_path / "t.npy"), x.T)


def test_npy_written_by_numpy(tmp_path, rng):
    x = random_array(rng, (3, 5), "int32")
    np.save(tmp_path / "f.npy", np.asfortranarray(x))
    assert_equal(mx.load(str(tmp_path / "f.npy")), x, "int32")
    np.save(tmp_path / "be.npy", x.astype(">i4"))
    assert_equal(mx.load(str(tmp_path / "be.npy")), x, "int32")
    y = random_array(rng, (4,), "complex64")
    np.save(tmp_path / "bec.npy", y.astype(">c8"))
    assert_equal(mx.load(str(tmp_path / "bec.npy")), y, "complex64")


def test_npy_file_objects_and_extension(tmp_path, rng):
    x = random_array(rng, (6,), "float16")
    buf = io.BytesIO()
    mx.save(buf, mx.array(x))
    buf.seek(0)
    assert_equal(mx.load(buf, format="npy"), x, "float16")
    buf.seek(0)
    assert_equal(mlx_core.load(buf, format="npy"), x, "float16")
    with open(tmp_path / "f.npy", "wb") as f:
        mx.save(f, mx.array(x))
    with open(tmp_path / "f.npy", "rb") as f:  # format from the file's name
        assert_equal(mx.load(f), x, "float16")
    mx.save(str(tmp_path / "noext"), mx.array(x))  # ".npy" is appended, as in MLX
    assert_equal(mx.load(str(tmp_path / "noext.npy")), x, "float16")


# ---- .npz

@pytest.mark.parametrize("compressed", [False, True])
def test_npz_both_ways(tmp_path, rng, compressed):
    a, b = random_array(rng, (2, 3), "int16"), random_array(rng, (4,), "bfloat16")
    w = random_array(rng, (3,), "float32")
    save = mx.savez_compressed if compressed else mx.savez
    save(str(tmp_path / "z"), alloy_array(a), alloy_array(b), w=alloy_array(w))
    path = tmp_path / "z.npz"
    members = zipfile.ZipFile(path).infolist()
    assert sorted(m.filename for m in members) == ["arr_0.npy", "arr_1.npy", "w.npy"]
    want_type = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
    assert all(m.compress_type == want_type for m in members)
    with np.load(path) as z:
        np.testing.assert_array_equal(z["arr_0"], a)
        np.testing.assert_array_equal(z["w"], w)
    got = mlx_core.load(str(path))
    assert sorted(got) == ["arr_0", "arr_1", "w"]
    assert_equal(got["arr_1"], b, "bfloat16")

    mlx_save = mlx_core.savez_compressed if compressed else mlx_core.savez
    mlx_save(str(tmp_path / "m.npz"), mlx_array(a), w=mlx_array(w))
    got = mx.load(str(tmp_path / "m.npz"))
    assert sorted(got) == ["arr_0", "w"]
    assert_equal(got["arr_0"], a, "int16")
    assert_equal(got["w"], w, "float32")


def test_npz_numpy_and_file_objects(tmp_path, rng):
    x = random_array(rng, (3,), "int64")
    np.savez(tmp_path / "n.npz", x, k=x * 2)
    got = mx.load(str(tmp_path / "n.npz"))
    assert_equal(got["arr_0"], x, "int64")
    assert_equal(got["k"], x * 2, "int64")
    buf = io.BytesIO()
    mx.savez(buf, y=mx.array(x))
    buf.seek(0)
    assert_equal(mx.load(buf, format="npz")["y"], x, "int64")


def test_savez_name_clash(tmp_path):
    a = mx.array([1])
    with pytest.raises(ValueError):
        mlx_core.savez(str(tmp_path / "c.npz"), mlx_core.array([1]), arr_0=mlx_core.array([1]))
    with pytest.raises(ValueError, match="arr_0"):
        mx.savez(str(tmp_path / "c.npz"), a, arr_0=a)


# ---- .safetensors

def test_safetensors_both_ways(tmp_path, rng):
    xs = {f"t_{d}": random_array(rng, (2, 3), d) for d in SAFETENSORS_DTYPES}
    xs["scalar"] = random_array(rng, (), "float32")
    meta = {"format": "mlx", "note": 'quote " and \\ and ü'}
    mx.save_safetensors(str(tmp_path / "a"), {k: alloy_array(v) for k, v in xs.items()}, metadata=meta)
    arrays, got_meta = mlx_core.load(str(tmp_path / "a.safetensors"), return_metadata=True)
    assert got_meta == meta
    assert sorted(arrays) == sorted(xs)
    for k, v in xs.items():
        assert_equal(arrays[k], v, k[2:] if k.startswith("t_") else "float32")

    mlx_core.save_safetensors(str(tmp_path / "m.safetensors"), {k: mlx_array(v) for k, v in xs.items()},
                              metadata=meta)
    arrays, got_meta = mx.load(str(tmp_path / "m.safetensors"), return_metadata=True)
    assert got_meta == meta
    for k, v in xs.items():
        assert_equal(arrays[k], v, k[2:] if k.startswith("t_") else "float32")
    # Without metadata MLX writes "__metadata__": null; Alloy reads that too.
    mlx_core.save_safetensors(str(tmp_path / "n.safetensors"), {"x": mlx_array(xs["t_int8"])})
    assert mx.load(str(tmp_path / "n.safetensors"), return_metadata=True)[1] == {}


def test_safetensors_reference_reader(tmp_path, rng):
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    x = random_array(rng, (4, 2), "float16")
    buf = io.BytesIO()
    mx.save_safetensors(buf, {"x": mx.array(x)})
    got = safetensors_numpy.load(buf.getvalue())
    np.testing.assert_array_equal(got["x"], x)
    data = safetensors_numpy.save({"y": x}, metadata={"k": "v"})
    arrays, meta = mx.load(io.BytesIO(data), format="safetensors", return_metadata=True)
    assert meta == {"k": "v"}
    assert_equal(arrays["y"], x, "float16")


def test_safetensors_bad_input(tmp_path):
    for m in (mlx_core, mx):
        with pytest.raises(ValueError):
            m.save_safetensors(str(tmp_path / "b.safetensors"), {"a": m.array([1])}, metadata={"k": 1})
        with pytest.raises(RuntimeError):
            m.save_safetensors(str(tmp_path / "b.safetensors"), {"a": m.array([1.0], m.float64)})


# ---- .gguf

def test_gguf_both_ways(tmp_path, rng):
    xs = {f"t_{d}": random_array(rng, (3, 2, 4), d) for d in GGUF_DTYPES}
    xs["vec"] = random_array(rng, (5,), "float32")
    xs["scalar"] = random_array(rng, (), "float32")
    v = random_array(rng, (3,), "uint8")

    def meta(m):
        return {"name": "model", "tokens": ["a", "bc"], "count": m.array(7), "scale": m.array(1.5),
                "flag": m.array(True), "v": m.array(v), "big": m.array(2**40, m.int64)}

    def check_meta(got, m):
        assert got["name"] == "model" and got["tokens"] == ["a", "bc"]
        want = meta(m)
        for k in ("count", "scale", "flag", "v", "big"):
            assert str(got[k].dtype).split(".")[-1] == str(want[k].dtype).split(".")[-1]
            assert tuple(got[k].shape) == tuple(want[k].shape)
            np.testing.assert_array_equal(to_numpy(got[k]), to_numpy(want[k]))

    mx.save_gguf(str(tmp_path / "a"), {k: alloy_array(x) for k, x in xs.items()}, meta(mx))
    arrays, got_meta = mlx_core.load(str(tmp_path / "a.gguf"), return_metadata=True)
    check_meta(got_meta, mlx_core)
    for k, x in xs.items():
        assert_equal(arrays[k], x, k[2:] if k.startswith("t_") else "float32")

    mlx_core.save_gguf(str(tmp_path / "m.gguf"), {k: mlx_array(x) for k, x in xs.items()}, meta(mlx_core))
    arrays, got_meta = mx.load(str(tmp_path / "m.gguf"), return_metadata=True)
    check_meta(got_meta, mx)
    for k, x in xs.items():
        assert_equal(arrays[k], x, k[2:] if k.startswith("t_") else "float32")
    assert sorted(mx.load(str(tmp_path / "m.gguf"))) == sorted(xs)


@pytest.mark.parametrize("dtype", ["bfloat16", "int64", "uint8", "bool", "float64"])
def test_gguf_unsupported_dtypes(tmp_path, dtype):
    for m in (mlx_core, mx):
        with pytest.raises(RuntimeError, match=dtype):
            m.save_gguf(str(tmp_path / "u.gguf"), {"a": m.array([1, 0]).astype(getattr(m, "bool_" if dtype == "bool" else dtype))})


def test_gguf_bad_metadata(tmp_path):
    for m in (mlx_core, mx):
        with pytest.raises(RuntimeError):
            m.save_gguf(str(tmp_path / "b.gguf"), {}, {"k": m.zeros((2, 2))})
        with pytest.raises(RuntimeError):
            m.save_gguf(str(tmp_path / "b.gguf"), {}, {"k": m.array([], m.float32)})


# ---- errors shared by the formats

def test_load_errors_match_mlx(tmp_path):
    mx.save(str(tmp_path / "t.npy"), mx.array([1, 2]))
    (tmp_path / "garbage.npy").write_bytes(b"definitely not an array file")
    (tmp_path / "u.npy").write_bytes(np.lib.format.magic(1, 0) + b"")
    np.save(tmp_path / "s.npy", np.array(["a", "b"]))
    cases = [
        ("nope.npy", {}, RuntimeError),
        ("nope.xyz", {}, ValueError),
        ("noext", {}, ValueError),
        ("t.npy", {"format": "foo"}, ValueError),
        ("t.npy", {"format": "npz"}, ValueError),
        ("t.npy", {"return_metadata": True}, ValueError),
        ("t.npy", {"format": "safetensors"}, RuntimeError),
        ("t.npy", {"format": "gguf"}, RuntimeError),
        ("garbage.npy", {}, RuntimeError),
        ("nope.npz", {}, ValueError),
        ("nope.safetensors", {}, RuntimeError),
        ("nope.gguf", {}, ValueError),
        ("s.npy", {}, ValueError),
    ]
    for name, kw, exc in cases:
        with pytest.raises(exc):
            mlx_core.load(str(tmp_path / name), **kw)
        with pytest.raises(exc, match=r"\[load"):
            mx.load(str(tmp_path / name), **kw)


def test_save_errors_match_mlx(tmp_path):
    for m in (mlx_core, mx):
        with pytest.raises(RuntimeError):
            m.save(str(tmp_path / "missing_dir" / "x.npy"), m.array([1]))
        with pytest.raises(ValueError):
            m.save(3, m.array([1]))
        with pytest.raises(TypeError):
            m.save(str(tmp_path / "x.npy"), [1, 2])
