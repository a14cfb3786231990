"""Arrays as objects: devices and streams, evaluation triggers, printing,
memory counters, dtype objects, errors."""
import os
import subprocess
import sys

import numpy as np
import pytest

import alloy.core as mx

DEVICE = os.environ.get("ALLOY_TEST_DEVICE", "cpu")


def test_default_device_and_availability():
    assert mx.is_available(mx.cpu)
    assert mx.default_device() == (mx.gpu if DEVICE == "gpu" else mx.cpu)


@pytest.mark.skipif(mx.is_available(mx.gpu), reason="what happens without a GPU")
def test_gpu_work_without_a_gpu_runs_on_the_cpu_or_raises_when_strict(rng):
    # MLX code hard-codes stream=mx.gpu; without a GPU it runs on the CPU
    # after a one-time note, and ALLOY_GPU_FALLBACK=error makes it an error.
    x = rng.standard_normal(4).astype(np.float32)
    out = mx.exp(mx.array(x), stream=mx.gpu)
    np.testing.assert_allclose(np.array(out), np.exp(x.astype(np.float64)), rtol=1e-6)
    assert mx.new_stream(mx.gpu).device == mx.cpu
    script = (
        "import alloy.core as mx\n"
        "for call in (lambda: mx.set_default_device(mx.gpu), lambda: mx.add(mx.array([1.0]), 1, stream=mx.gpu)):\n"
        "    try:\n"
        "        call()\n"
        "    except ValueError as e:\n"
        "        assert 'not available' in str(e), e\n"
        "    else:\n"
        "        raise SystemExit('no error under ALLOY_GPU_FALLBACK=error')\n"
        "mx.eval(mx.exp(mx.array([1.0])))\n"
    )
    env = dict(os.environ, ALLOY_GPU_FALLBACK="error")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr + done.stdout
    noted = subprocess.run([sys.executable, "-c", "import alloy.core as mx; mx.eval(mx.exp(mx.array([1.0]), stream=mx.gpu));"
                            "mx.eval(mx.exp(mx.array([1.0]), stream=mx.gpu))"],
                           env={k: v for k, v in os.environ.items() if k != "ALLOY_GPU_FALLBACK"},
                           capture_output=True, text=True)
    assert noted.returncode == 0, noted.stderr
    assert noted.stderr.count("mx.gpu is not available") == 1, noted.stderr


def test_stream_argument_runs_on_that_device(rng):
    x = rng.standard_normal(5).astype(np.float32)
    a = mx.array(x)
    out = mx.exp(a, stream=mx.cpu)
    np.testing.assert_allclose(np.array(out), np.exp(x.astype(np.float64)), rtol=1e-6)
    s = mx.new_stream(mx.cpu)
    out2 = mx.multiply(a, 2, stream=s)
    np.testing.assert_allclose(np.array(out2), x * 2)
    assert s.device == mx.cpu


def test_synchronize_waits_for_the_default_or_named_stream(rng):
    # Work on the default device's stream, then an explicit stream: after
    # synchronize the results read back are the computed ones.
    x = rng.standard_normal(4096).astype(np.float32)
    a = mx.array(x)
    s = mx.new_stream(mx.default_device())
    out = mx.multiply(a, 3, stream=s)
    mx.eval(out)
    mx.synchronize()
    mx.synchronize(s)
    mx.synchronize(mx.default_device())
    np.testing.assert_allclose(np.array(out), x * 3, rtol=1e-6)
    with pytest.raises(TypeError):
        mx.synchronize("gpu")


@pytest.mark.skipif(not mx.is_available(mx.gpu), reason="needs a GPU: the cross-device round trip")
def test_cpu_array_consumed_on_gpu_and_back(rng):
    x = rng.standard_normal(1000).astype(np.float32)
    a = mx.array(x)
    on_gpu = mx.exp(a, stream=mx.gpu)
    back = mx.add(on_gpu, 1, stream=mx.cpu)
    np.testing.assert_allclose(np.array(back), np.exp(x.astype(np.float64)) + 1, rtol=1e-6)


def test_evaluation_triggers(rng):
    x = rng.standard_normal((2, 3)).astype(np.float32)
    a = mx.array(x) * 2
    assert a.tolist() == (x * 2).tolist()
    assert isinstance(mx.sum(a).item(), float)
    assert "array(" in repr(a) and "dtype=float32" in repr(a)
    np.testing.assert_array_equal(np.array(a), x * 2)
    mx.eval([a, {"k": (a + 1,)}])


def _deep_chain(lib, x, w, steps):
    """Hundreds of small dependent ops of several kinds (scalars, unary,
    binary, a reduction broadcast back, transposed views), as a training
    step or a decoding loop makes them. Every step contracts (|w| < 1), so
    float32 stays near the float64 reference however long the chain."""
    for i in range(steps):
        if i % 4 == 0:
            x = x * w + 0.25
        elif i % 4 == 1:
            x = lib.sin(x)
        elif i % 4 == 2:
            x = x - lib.mean(x, axis=1, keepdims=True)
        else:
            x = lib.transpose(lib.transpose(x) * 0.75)
    return x


def test_repeated_deep_chain_same_values_each_eval(rng):
    # On the GPU the first eval of a tape runs node by node, the next ones as
    # CUDA graphs (made, then updated with new buffers): each must match.
    w = rng.uniform(-0.9, 0.9, (16, 32))
    for _ in range(4):
        x = rng.standard_normal((16, 32))
        got = _deep_chain(mx, mx.array(x.astype(np.float32)), mx.array(w.astype(np.float32)), 400)
        mx.eval(got)
        want = _deep_chain(np, x, w, 400)
        np.testing.assert_allclose(np.array(got), want, rtol=1e-4, atol=1e-4)


def test_repeated_chain_through_unchecked_metal_kernels(rng):
    # Kernels nobody waits for inside their eval (no bounds check, no
    # timeout) join the ops' CUDA graphs on the GPU; each eval must match.
    axpb = mx.fast.metal_kernel(
        name="axpb", input_names=["x", "a"], output_names=["y"],
        source="uint i = thread_position_in_grid.x; y[i] = x[i] * a[i] + 0.125f;",
        compile_options={"bounds_check": False})

    def step(lib, x, a):
        for _ in range(40):
            if lib is np:
                x = x * a + 0.125
            else:
                x = axpb(inputs=[x, a], grid=(x.size, 1, 1), threadgroup=(64, 1, 1),
                         output_shapes=[x.shape], output_dtypes=[mx.float32])[0]
            x = lib.sin(x) * 0.5
        return x

    a = rng.uniform(-0.9, 0.9, 512)
    for _ in range(4):
        x = rng.standard_normal(512)
        got = step(mx, mx.array(x.astype(np.float32)), mx.array(a.astype(np.float32)))
        mx.eval(got)
        np.testing.assert_allclose(np.array(got), step(np, x, a), rtol=1e-4, atol=1e-5)


def _on_threads(work, inputs):
    """work(xs) on a thread for each xs of `inputs`; what any raised fails the test."""
    import threading

    errors = []

    def worker(xs):
        try:
            work(xs)
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(xs,)) for xs in inputs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_repeated_deep_chains_from_several_threads(rng):
    w = rng.uniform(-0.9, 0.9, (16, 32))

    def work(xs):
        for x in xs:
            got = _deep_chain(mx, mx.array(x.astype(np.float32)), mx.array(w.astype(np.float32)), 300)
            mx.eval(got)
            np.testing.assert_allclose(np.array(got), _deep_chain(np, x, w, 300), rtol=1e-4, atol=1e-4)

    _on_threads(work, [[rng.standard_normal((16, 32)) for _ in range(3)] for _ in range(3)])


def test_results_read_right_after_eval_by_several_threads(rng):
    # Each thread reads its result as soon as its eval returns, while the
    # others' work keeps the GPU busy: a thread whose wait another thread's
    # wait had covered returned before that wait was over, and read values
    # the GPU had not written yet (an H100 under an 8-process load).
    n = 256
    w = rng.standard_normal((n, n)) * 0.5 / np.sqrt(n)

    def chain(x, wm):
        y = x
        for _ in range(12):
            y = y @ wm + x
        return y

    def work(xs):
        wm = mx.array(w.astype(np.float32))
        for x in xs:
            got = chain(mx.array(x.astype(np.float32)), wm)
            mx.eval(got)
            want = chain(x, w)
            np.testing.assert_allclose(np.array(got), want, rtol=1e-3, atol=1e-3 * np.abs(want).max())

    _on_threads(work, [[rng.standard_normal((n, n)) for _ in range(6)] for _ in range(4)])


def test_dtype_objects():
    assert mx.float32.size == 4 and mx.bfloat16.size == 2 and mx.complex64.size == 8
    assert mx.bool_ == mx.bool_ and mx.int32 != mx.int64
    assert mx.issubdtype(mx.float16, mx.floating)
    assert mx.issubdtype(mx.uint8, mx.integer) and not mx.issubdtype(mx.uint8, mx.signedinteger)
    assert mx.promote_types(mx.uint8, mx.int8) == mx.int16
    assert mx.promote_types(mx.float16, mx.bfloat16) == mx.float32
    assert mx.promote_types(mx.int32, mx.float16) == mx.float16


def test_memory_counters():
    before = mx.get_active_memory()
    a = mx.zeros((1 << 20,), dtype=mx.float32)
    mx.eval(a)
    assert mx.get_active_memory() >= before + (4 << 20)
    assert mx.get_peak_memory() >= mx.get_active_memory()
    del a
    assert mx.get_active_memory() < before + (4 << 20)


def test_errors_are_python_exceptions_and_keep_state():
    a = mx.array([1.0, 2.0, 3.0])
    mx.eval(a)
    with pytest.raises(ValueError):
        mx.add(mx.zeros((2, 3)), mx.zeros((4,)))
    with pytest.raises(IndexError):
        a[5]
    with pytest.raises((TypeError, ValueError)):
        mx.array([[1, 2], [3]])
    assert a.tolist() == [1.0, 2.0, 3.0]
