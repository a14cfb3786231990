"""export_function / import_function / exporter against real MLX.

Each framework exports the same Python function to its own file (the
formats differ: Alloy does not read .mlxfn files), imports it back and runs
it on fresh inputs; results, dtypes and shapes are compared with MLX's
imported function, and with calling the function directly. Error types on
bad calls and bad files are compared too.
"""
import subprocess
import sys
import textwrap

import mlx.core as mlx_core
import numpy as np
import pytest

import alloy.core as mx
from mlx_oracle import assert_same_value, random_array, same_error, to_numpy


def round_trip(tmp_path, fun, export_args, call_args, export_kwargs=None, call_kwargs=None, shapeless=False):
    """(alloy outputs, mlx outputs) of the imported function on call_args."""
    results = []
    for name, m in (("alloy", mx), ("mlx", mlx_core)):
        conv = lambda v: m.array(v) if isinstance(v, np.ndarray) else v  # noqa: E731
        path = str(tmp_path / f"{name}.fn")
        ek = {k: conv(v) for k, v in (export_kwargs or {}).items()}
        m.export_function(path, lambda *a, **k: fun(m, *a, **k), *[conv(a) for a in export_args],
                          shapeless=shapeless, **ek)
        imported = m.import_function(path)
        ck = {k: conv(v) for k, v in (call_kwargs or {}).items()}
        out = imported(*[conv(a) for a in call_args], **ck)
        assert isinstance(out, tuple)
        results.append(out)
    return results


def test_elementwise_and_keywords(tmp_path, rng):
    def f(m, x, y, scale=None):
        return m.exp(x) * y + scale, m.maximum(x, y)

    ex = [random_array(rng, (3, 4)), random_array(rng, (3, 4))]
    call = [random_array(rng, (3, 4)), random_array(rng, (3, 4))]
    got, want = round_trip(tmp_path, f, ex, call, {"scale": random_array(rng, ())}, {"scale": random_array(rng, ())})
    assert_same_value(list(got), list(want))


def test_many_primitives(tmp_path, rng):
    def f(m, x, w, idx):
        h = m.softmax(x @ w, axis=-1)
        s = m.sort(h, axis=-1)
        c = m.cumsum(s, axis=1)
        g = m.take(c, idx, axis=0)
        t = m.concatenate([g.T, g.T[:, :2] * 2], axis=1)
        r = m.where(t > 0.5, t, -t).astype(m.float16)
        return r, m.argmax(x, axis=1), m.reshape(x[1:, ::2], (-1,)), m.logsumexp(x, axis=0, keepdims=True)

    ex = [random_array(rng, (5, 6)), random_array(rng, (6, 4)), np.array([0, 4, 2], np.int32)]
    call = [random_array(rng, (5, 6)), random_array(rng, (6, 4)), rng.integers(0, 5, (3,)).astype(np.int32)]
    got, want = round_trip(tmp_path, f, ex, call)
    assert_same_value(list(got), list(want))
    # And the same as calling the function itself.
    direct = f(mx, *[mx.array(a) for a in call])
    assert_same_value(list(got), [mlx_core.array(to_numpy(d)).astype(getattr(mlx_core, str(d.dtype).split(".")[-1]))
                                  for d in direct])


def test_closure_constants_and_modules(tmp_path, rng):
    import alloy.nn as ann
    import mlx.nn as mnn
    from nn_oracle import pair

    mine, theirs = pair(lambda nn: nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 3)), randomize=rng)
    x_ex, x = random_array(rng, (2, 8)), random_array(rng, (2, 8))
    mx.export_function(str(tmp_path / "a.fn"), lambda v: mine(v), mx.array(x_ex))
    mlx_core.export_function(str(tmp_path / "m.fn"), lambda v: theirs(v), mlx_core.array(x_ex))
    got = mx.import_function(str(tmp_path / "a.fn"))(mx.array(x))
    want = mlx_core.import_function(str(tmp_path / "m.fn"))(mlx_core.array(x))
    assert_same_value(list(got), list(want))
    # The weights were saved as they were at export: later updates do not reach the file.
    mine.update({"layers": [{"weight": mx.zeros((16, 8)), "bias": mx.zeros((16,))}, {}, {}]})
    again = mx.import_function(str(tmp_path / "a.fn"))(mx.array(x))
    np.testing.assert_array_equal(to_numpy(again[0]), to_numpy(got[0]))
    del ann, mnn


def test_tuple_and_dict_calling_forms(tmp_path, rng):
    def f(m, a, b, c=None):
        return a - b * c

    a, b, c = (random_array(rng, (4,)) for _ in range(3))
    for name, m in (("alloy", mx), ("mlx", mlx_core)):
        path = str(tmp_path / name)
        m.export_function(path, lambda *x, **k: f(m, *x, **k), (m.array(a), m.array(b)), {"c": m.array(c)})
        fn = m.import_function(path)
        one = fn(m.array(a), m.array(b), c=m.array(c))
        two = fn((m.array(a), m.array(b)), {"c": m.array(c)})
        np.testing.assert_array_equal(np.array(one[0]), np.array(two[0]))
        np.testing.assert_allclose(np.array(one[0]), a - b * c, rtol=1e-6)


def test_exporter_holds_several_traces(tmp_path, rng):
    shapes = [(3,), (2, 2), (4, 1)]
    for name, m in (("alloy", mx), ("mlx", mlx_core)):
        path = str(tmp_path / name)
        with m.exporter(path, lambda x: (m.sum(x * x), m.abs(x))) as ex:
            for s in shapes:
                ex(m.array(random_array(rng, s)))
        fn = m.import_function(path)
        for s in shapes:
            x = random_array(rng, s)
            out = fn(m.array(x))
            np.testing.assert_allclose(float(out[0].item()), float((x.astype(np.float64) ** 2).sum()), rtol=1e-5)
            assert tuple(out[1].shape) == s
    for name, m in (("alloy", mx), ("mlx", mlx_core)):
        fn = m.import_function(str(tmp_path / name))
        with pytest.raises(ValueError, match="No imported function found"):
            fn(m.array(random_array(rng, (3, 3))))


def test_shapeless(tmp_path, rng):
    def f(m, x, w):
        return m.sum(m.exp(x) @ w, axis=-1), m.sort(x, axis=0)

    got, want = round_trip(tmp_path, f, [random_array(rng, (2, 3)), random_array(rng, (3, 5))],
                           [random_array(rng, (7, 4)), random_array(rng, (4, 2))], shapeless=True)
    assert_same_value(list(got), list(want))
    assert tuple(got[0].shape) == (7,)
    # A primitive that holds its traced shape cannot follow new ones: a clear error.
    path = str(tmp_path / "reshape.fn")
    mx.export_function(path, lambda x: mx.reshape(x, (6,)), mx.array(random_array(rng, (2, 3))), shapeless=True)
    fn = mx.import_function(path)
    np.testing.assert_array_equal(to_numpy(fn(mx.array(np.arange(6.0, dtype=np.float32).reshape(3, 2)))[0]),
                                  np.arange(6.0))
    with pytest.raises(ValueError, match="Reshape"):
        fn(mx.array(random_array(rng, (4, 4))))
    # A different dtype never matches.
    with pytest.raises(ValueError, match="No imported function"):
        fn(mx.array(random_array(rng, (2, 3), "float16")))


def test_custom_function_body_and_random(tmp_path, rng):
    @mx.custom_function
    def g(x):
        return mx.sin(x) * 2

    @g.vjp
    def g_vjp(primals, cotangent, output):
        return cotangent

    key = mx.random.key(int(rng.integers(1 << 30)))

    def f(x):
        return g(x) + mx.random.normal(x.shape, key=key)

    x = mx.array(random_array(rng, (5,)))
    path = str(tmp_path / "cf.fn")
    mx.export_function(path, f, x)
    np.testing.assert_allclose(to_numpy(mx.import_function(path)(x)[0]), to_numpy(f(x)), rtol=1e-6, atol=1e-6)


def test_metadata_and_another_process(tmp_path, rng):
    x = random_array(rng, (3,))
    path = str(tmp_path / "meta.fn")
    mx.export_function(path, lambda v: mx.cumprod(v * 3.0), mx.array(x), metadata='{"model": "demo"}')
    fn, meta = mx.import_function(path, return_metadata=True)
    assert meta == '{"model": "demo"}'
    want = np.cumprod(x.astype(np.float64) * 3.0)
    np.testing.assert_allclose(to_numpy(fn(mx.array(x))[0]), want, rtol=1e-5)
    # A fresh process has only the file.
    code = textwrap.dedent(f"""
        import numpy as np, alloy.core as mx
        out = mx.import_function({path!r})(mx.array(np.array({x.tolist()!r}, np.float32)))
        print(repr(np.array(out[0]).tolist()))
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    np.testing.assert_allclose(np.array(eval(res.stdout.strip())), want, rtol=1e-5)


def test_errors(tmp_path, rng):
    x = random_array(rng, (3,))
    # Calls that match no trace, and the wrong calling forms: ValueError, as MLX.
    for name, m in (("alloy", mx), ("mlx", mlx_core)):
        path = str(tmp_path / name)
        m.export_function(path, lambda a, b: a + b, m.array(x), m.array(x))
        fn = m.import_function(path)
        for bad in [(m.array(x),), (m.array(x), m.array(x[:2])), (m.array(x), m.array(x.astype(np.float16)))]:
            with pytest.raises(ValueError):
                fn(*bad)
        with pytest.raises(ValueError):
            fn((m.array(x),), m.array(x))
    # Missing and damaged files: RuntimeError, as MLX.
    same_error(lambda m: m.import_function(str(tmp_path / "does_not_exist.fn")))
    (tmp_path / "garbage.fn").write_bytes(b"garbage")
    same_error(lambda m: m.import_function(str(tmp_path / "garbage.fn")))
    # MLX's own files are named as such.
    mlx_core.export_function(str(tmp_path / "theirs.mlxfn"), lambda a: a * 2, mlx_core.array(x))
    with pytest.raises(RuntimeError, match="not a function exported by Alloy"):
        mx.import_function(str(tmp_path / "theirs.mlxfn"))
    # A truncated Alloy file.
    good = tmp_path / "alloy"
    (tmp_path / "cut.fn").write_bytes(good.read_bytes()[:40])
    with pytest.raises(RuntimeError, match="import_function"):
        mx.import_function(str(tmp_path / "cut.fn"))
    # Non-array inputs and outputs.
    with pytest.raises(ValueError, match="Inputs must be arrays"):
        mx.export_function(str(tmp_path / "n.fn"), lambda a: a, 3)
    with pytest.raises(ValueError, match="must return an array"):
        mx.export_function(str(tmp_path / "n.fn"), lambda a: 3, mx.array(x))
    # Custom kernels are not exported (named in the error).
    k = mx.fast.metal_kernel(name="twice", input_names=["a"], output_names=["o"],
                             source="uint i = thread_position_in_grid.x; o[i] = a[i] * 2;")

    def with_kernel(a):
        return k(inputs=[a], grid=(3, 1, 1), threadgroup=(3, 1, 1), output_shapes=[(3,)],
                 output_dtypes=[mx.float32])[0]

    with pytest.raises(ValueError, match="CustomKernel"):
        mx.export_function(str(tmp_path / "k.fn"), with_kernel, mx.array(x))


def test_inverse_ffts_keep_their_scale(tmp_path, rng):
    """An FFT node's scale (an inverse's 1/n, inside the transform when
    traced on the CPU) is part of the file: the imported function gives the
    direct call's bits, which are MLX's. The import is called on the suite's
    device, so on the GPU the scaled node takes cuFFT's host path."""
    z = random_array(rng, (4, 6, 10), "complex64")

    def f(m, a):
        return m.fft.ifft2(a), m.fft.irfftn(a, s=(6, 16), axes=(1, 2), norm="ortho")

    path = str(tmp_path / "inverse.fn")
    device = mx.default_device()
    mx.set_default_device(mx.cpu)
    mx.export_function(path, lambda a: f(mx, a), mx.array(z))
    direct = f(mx, mx.array(z))
    mx.set_default_device(device)
    got = mx.import_function(path)(mx.array(z))
    want = f(mlx_core, mlx_core.array(z))
    for g, d, w in zip(got, direct, want):
        assert_same_value(g, w)
        np.testing.assert_array_equal(to_numpy(g), to_numpy(d))
        np.testing.assert_array_equal(to_numpy(g), np.array(w))


def test_a_file_of_the_previous_format_is_refused_by_version(tmp_path, rng):
    """Format 1 held FFT nodes without their scale; such a file is refused
    with both versions named, not misread."""
    path = tmp_path / "f.fn"
    mx.export_function(str(path), lambda a: a * 2, mx.array(random_array(rng, (3,))))
    data = bytearray(path.read_bytes())
    assert data[:8] == b"ALLOYFN\0" and int.from_bytes(data[8:12], "little") == 2
    data[8:12] = (1).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    with pytest.raises(RuntimeError, match="format version 1; this Alloy reads version 2"):
        mx.import_function(str(path))
