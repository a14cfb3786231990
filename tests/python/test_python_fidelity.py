"""Fidelity of the Python surface where real code depends on MLX's exact
behaviour: custom_function's decorators, the outputs a custom VJP sees, and
numpy 2's __array__(dtype, copy) contract. Each case is also run through real
MLX where MLX can run it, so the expectation is MLX's, not ours.
"""
import numpy as np
import pytest

import alloy.core as mx
import mlx.core as mlx_core



@pytest.mark.parametrize("module", [mx, mlx_core], ids=["alloy", "mlx"])
def test_custom_function_decorators_return_the_function(module):
    @module.custom_function
    def f(x):
        return module.sin(x)

    @f.vjp
    def f(primals, cotangent, output):  # noqa: F811 - the MLX idiom re-binds f
        # one argument: MLX hands the rule that argument, not a tuple of it
        assert isinstance(primals, module.array) and isinstance(output, module.array)
        return (cotangent * 10.0,)

    @f.jvp
    def f(primals, tangents):  # noqa: F811
        assert isinstance(tangents, module.array)
        return (tangents * 20.0,)

    assert callable(f) and type(f).__name__ == "custom_function"
    x = module.array([0.5, 1.5])
    np.testing.assert_allclose(np.array(module.grad(lambda x: f(x).sum())(x)), [10.0, 10.0])
    _, (t,) = module.jvp(f, [x], [module.array([1.0, 2.0])])
    np.testing.assert_allclose(np.array(t), [20.0, 40.0])


def _three_output_function(module, seen):
    @module.custom_function
    def f(x, y):
        return x * 2.0, y * 3.0, x + y

    @f.vjp
    def f(primals, cotangents, outputs):  # noqa: F811
        seen.append([np.array(o) for o in outputs])
        c0, c1, c2 = cotangents
        return (c0 * 2.0 + c2, c1 * 3.0 + c2)

    return f


@pytest.mark.parametrize("used", [(2,), (1,), (0, 2), (1, 2), (0, 1, 2)])
def test_custom_vjp_sees_every_true_output(rng, used):
    # Only some outputs reach the loss: the others have no cotangent, yet the
    # rule must still see their true values (it once saw output 0 instead).
    x_np, y_np = rng.standard_normal(5).astype(np.float32), rng.standard_normal(5).astype(np.float32)
    results = {}
    for name, module in [("alloy", mx), ("mlx", mlx_core)]:
        seen = []
        f = _three_output_function(module, seen)

        def loss(x, y):
            outs = f(x, y)
            return sum((outs[i] * (i + 1.0)).sum() for i in used)

        grads = module.grad(loss, argnums=(0, 1))(module.array(x_np), module.array(y_np))
        results[name] = ([np.array(g) for g in grads], seen[-1])
    expected_outputs = [x_np * 2, y_np * 3, x_np + y_np]
    for got, want in zip(results["alloy"][1], expected_outputs):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    for got, want in zip(results["alloy"][1], results["mlx"][1]):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    for got, want in zip(results["alloy"][0], results["mlx"][0]):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_dropped_sibling_output_read_later_is_its_own_value(rng):
    # The C++ rule behind the Python case: a multi-output node whose other
    # outputs were dropped still hands each output's own value to a vjp.
    x_np = rng.standard_normal(4).astype(np.float32)
    seen = []
    f = _three_output_function(mx, seen)
    mx.vjp(lambda x: [f(x, x)[2]], [mx.array(x_np)], [mx.ones((4,))])
    np.testing.assert_allclose(seen[-1][1], x_np * 3, rtol=1e-6)


def on_cpu(values):
    # An array whose memory is host memory on every run (computed on the CPU).
    return mx.multiply(mx.array(values), 1, stream=mx.cpu)


def test_asarray_is_a_read_only_view(rng):
    # Zero-copy, but read-only: Alloy's buffers never change once written
    # (the GPU keeps copies of host buffers), so a write must fail loudly
    # rather than reach some uses of the array and not others.
    values = rng.standard_normal((3, 4)).astype(np.float32)
    a = on_cpu(values)
    for view in (np.asarray(a), np.array(a, copy=False)):
        assert not view.flags.owndata and not view.flags.writeable
        np.testing.assert_array_equal(view, values)
        with pytest.raises(ValueError, match="read-only"):
            view[1, 2] = 123.0
    # a fresh copy is independent and writable
    fresh = np.array(a)
    fresh[2, 3] = 99.0
    assert a[2, 3].item() == values[2, 3]


def test_array_copy_false_views_strided_and_bfloat16(rng):
    values = rng.standard_normal((4, 6)).astype(np.float32)
    a = on_cpu(values)
    view = np.array(mx.transpose(a, stream=mx.cpu), copy=False)
    np.testing.assert_array_equal(view, values.T)
    assert not view.flags.owndata
    b = mx.astype(a, mx.bfloat16, stream=mx.cpu)
    bview = np.array(b, copy=False)
    assert str(bview.dtype) == "bfloat16"
    np.testing.assert_array_equal(bview.astype(np.float32), np.array(b.astype(mx.float32)))


def test_gpu_memory_is_copied_or_refused(rng):
    # GPU memory is not host memory: asarray copies, copy=False refuses.
    values = rng.standard_normal((4, 6)).astype(np.float32)
    if not mx.is_available(mx.gpu):
        # without a GPU the same request runs on the CPU: a view again
        assert not np.array(mx.multiply(mx.array(values), 1, stream=mx.gpu), copy=False).flags.owndata
        return
    g = mx.multiply(mx.array(values), 1, stream=mx.gpu)
    for x in (g, g.T):
        with pytest.raises(ValueError, match="GPU memory"):
            np.array(x, copy=False)
    np.testing.assert_array_equal(np.asarray(g.T), values.T)


@pytest.mark.parametrize("module", [mx, mlx_core], ids=["alloy", "mlx"])
def test_copy_false_with_another_dtype_is_a_value_error(module):
    a = module.array([1.0, 2.0, 3.0])
    with pytest.raises(ValueError):
        np.array(a, dtype=np.float64, copy=False)
    converted = np.asarray(a, dtype=np.float64)
    assert converted.dtype == np.float64
    np.testing.assert_array_equal(converted, [1.0, 2.0, 3.0])

