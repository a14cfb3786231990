"""Autodiff: grad, value_and_grad, vjp, jvp, stop_gradient, custom_function,
and every differentiable op's VJP and JVP against central finite differences
in float64 (CPU) or float32 (GPU run)."""
import os
import pathlib
import sys

import numpy as np
import pytest

import alloy.core as mx

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples" / "seeds"))

ON_GPU = os.environ.get("ALLOY_TEST_DEVICE", "cpu") == "gpu"
DT = mx.float32 if ON_GPU else mx.float64
NP_DT = np.float32 if ON_GPU else np.float64
EPS = 1e-2 if ON_GPU else 1e-6
TOL = 2e-2 if ON_GPU else 1e-6


def arr(x):
    return mx.array(np.asarray(x, dtype=NP_DT), dtype=DT)


def numeric_grad(f, xs, i):
    """d sum(f(xs)) / d xs[i] by central differences, in float64 on the host."""
    x0 = [np.array(x, dtype=np.float64) for x in xs]
    g = np.zeros_like(x0[i])
    it = np.nditer(x0[i], flags=["multi_index"])
    for _ in it:
        idx = it.multi_index
        plus = [x.copy() for x in x0]
        minus = [x.copy() for x in x0]
        plus[i][idx] += EPS
        minus[i][idx] -= EPS
        fp = float(np.array(mx.sum(f(*[arr(v) for v in plus]))).astype(np.float64))
        fm = float(np.array(mx.sum(f(*[arr(v) for v in minus]))).astype(np.float64))
        g[idx] = (fp - fm) / (2 * EPS)
    return g


# Each case: (name, function, input generator). Inputs avoid kinks and poles.
def pos(rng, shape):
    return rng.uniform(0.5, 2.0, shape)


def sym(rng, shape):
    return rng.uniform(-0.9, 0.9, shape)


UNARY = {
    "abs": (mx.abs, lambda r, s: r.choice([-1, 1], s) * r.uniform(0.2, 1, s)),
    "negative": (mx.negative, sym), "exp": (mx.exp, sym), "expm1": (mx.expm1, sym), "log": (mx.log, pos),
    "log1p": (mx.log1p, pos), "log2": (mx.log2, pos), "log10": (mx.log10, pos), "sin": (mx.sin, sym),
    "cos": (mx.cos, sym), "tan": (mx.tan, sym), "arcsin": (mx.arcsin, sym), "arccos": (mx.arccos, sym),
    "arctan": (mx.arctan, sym), "sinh": (mx.sinh, sym), "cosh": (mx.cosh, sym), "tanh": (mx.tanh, sym),
    "sqrt": (mx.sqrt, pos), "rsqrt": (mx.rsqrt, pos), "square": (mx.square, sym),
    "reciprocal": (mx.reciprocal, pos), "sigmoid": (mx.sigmoid, sym), "erf": (mx.erf, sym),
    "erfinv": (mx.erfinv, lambda r, s: r.uniform(-0.8, 0.8, s)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_vjp_and_jvp_match_finite_differences(rng, name):
    f, gen = UNARY[name]
    x = gen(rng, (3, 4))
    g = mx.grad(lambda a: mx.sum(f(a)))(arr(x))
    np.testing.assert_allclose(np.array(g), numeric_grad(f, [x], 0), rtol=TOL, atol=TOL)
    t = rng.standard_normal(x.shape)
    _, (jt,) = mx.jvp(lambda a: f(a), [arr(x)], [arr(t)])
    # For an elementwise f the Jacobian is diagonal: jvp = f'(x) * t.
    deriv = numeric_grad(f, [x], 0)
    np.testing.assert_allclose(np.array(jt), deriv * t, rtol=TOL, atol=TOL)


BINARY = {
    "add": mx.add, "subtract": mx.subtract, "multiply": mx.multiply, "divide": mx.divide,
    "power": mx.power, "maximum": mx.maximum, "minimum": mx.minimum, "arctan2": mx.arctan2,
    "logaddexp": mx.logaddexp,
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_vjp_with_broadcasting(rng, name):
    f = BINARY[name]
    a = rng.uniform(0.5, 2.0, (3, 4))
    b = rng.uniform(0.5, 2.0, (4,))
    if name in ("maximum", "minimum"):
        a = np.where(np.abs(a - b) < 10 * EPS + 0.05, b + 0.3, a)  # keep ties beyond the difference step
    ga, gb = mx.grad(lambda x, y: mx.sum(f(x, y)), argnums=(0, 1))(arr(a), arr(b))
    np.testing.assert_allclose(np.array(ga), numeric_grad(f, [a, b], 0), rtol=TOL, atol=TOL)
    np.testing.assert_allclose(np.array(gb), numeric_grad(f, [a, b], 1), rtol=TOL, atol=TOL)
    ta, tb = rng.standard_normal(a.shape), rng.standard_normal(b.shape)
    _, (jt,) = mx.jvp(f, [arr(a), arr(b)], [arr(ta), arr(tb)])
    h = EPS
    ref = (np.array(f(arr(a + h * ta), arr(b + h * tb))).astype(np.float64)
           - np.array(f(arr(a - h * ta), arr(b - h * tb))).astype(np.float64)) / (2 * h)
    np.testing.assert_allclose(np.array(jt), ref, rtol=TOL, atol=TOL)


STRUCTURAL = {
    "sum_axis": (lambda a: mx.sum(a, axis=1), (3, 4)),
    "mean_keepdims": (lambda a: mx.mean(a, axis=0, keepdims=True) * a, (3, 4)),
    "prod": (lambda a: mx.prod(a, axis=1), (3, 4)),
    "max": (lambda a: mx.max(a, axis=0), (3, 4)),
    "logsumexp": (lambda a: mx.logsumexp(a, axis=1), (3, 4)),
    "softmax": (lambda a: mx.softmax(a, axis=-1) * mx.arange(4).astype(a.dtype), (3, 4)),
    "var": (lambda a: mx.var(a, axis=1), (3, 4)),
    "std": (lambda a: mx.std(a), (3, 4)),
    "cumsum": (lambda a: mx.cumsum(a, axis=1) * mx.arange(4).astype(a.dtype), (3, 4)),
    "cumprod": (lambda a: mx.cumprod(a, axis=0), (3, 4)),
    "reshape": (lambda a: mx.reshape(a, (4, 3)) * mx.arange(3).astype(a.dtype), (3, 4)),
    "transpose": (lambda a: mx.transpose(a) * mx.arange(3).astype(a.dtype), (3, 4)),
    "slice_step": (lambda a: a[::2, ::-1] * 3, (3, 4)),
    "broadcast_to": (lambda a: mx.broadcast_to(a, (2, 3, 4)) * mx.arange(4).astype(a.dtype), (3, 4)),
    "concatenate": (lambda a: mx.concatenate([a, 2 * a], axis=1) * mx.arange(8).astype(a.dtype), (3, 4)),
    "stack_split": (lambda a: mx.stack(mx.split(a, 2, axis=1), axis=0) ** 2, (3, 4)),
    "pad": (lambda a: mx.pad(a, [(1, 0), (0, 2)]) * mx.arange(6).astype(a.dtype), (3, 4)),
    "gather": (lambda a: a[mx.array([2, 0, 2]), 1:] ** 2, (3, 4)),
    "take_along_axis": (lambda a: mx.take_along_axis(a, mx.array([[3], [0], [1]]), axis=1) ** 2, (3, 4)),
    "where": (lambda a: mx.where(a > 0, a * a, -a), (3, 4)),
    "clip": (lambda a: mx.clip(a, -0.5, 0.5) * a, (3, 4)),
    "matmul": (lambda a: a @ mx.transpose(a), (3, 4)),
}


@pytest.mark.parametrize("name", sorted(STRUCTURAL))
def test_structural_vjp_matches_finite_differences(rng, name):
    f, shape = STRUCTURAL[name]
    x = rng.uniform(-1, 1, shape)
    x = np.where(np.abs(x) < 0.1, 0.3, x)  # away from kinks at 0 and clip bounds
    x = np.where(np.abs(np.abs(x) - 0.5) < 0.05, 0.7, x)
    if name in ("cumprod", "prod"):
        x = np.abs(x) + 0.5
    if name == "max":  # distinct values, further apart than the difference step
        x = rng.permutation(int(np.prod(shape))).reshape(shape) * 0.15 - 0.8
    g = mx.grad(lambda a: mx.sum(f(a)))(arr(x))
    np.testing.assert_allclose(np.array(g), numeric_grad(f, [x], 0), rtol=TOL, atol=TOL)


def test_astype_passes_cotangents_through(rng):
    # Finite differences cannot see through a float32 rounding: check the rule.
    x = rng.uniform(-1, 1, (3, 4))
    g = mx.grad(lambda a: mx.sum(a.astype(mx.float16).astype(a.dtype) * 3))(arr(x))
    np.testing.assert_array_equal(np.array(g), np.full(x.shape, 3.0))


def test_scatter_add_vjp(rng):
    x = rng.standard_normal((5, 3))
    u = rng.standard_normal((4, 3))
    idx = mx.array([0, 2, 2, 4])

    def f(a, b):
        return a.at[idx].add(b) ** 2

    ga, gb = mx.grad(lambda a, b: mx.sum(f(a, b)), argnums=(0, 1))(arr(x), arr(u))
    np.testing.assert_allclose(np.array(ga), numeric_grad(f, [x, u], 0), rtol=TOL, atol=TOL)
    np.testing.assert_allclose(np.array(gb), numeric_grad(f, [x, u], 1), rtol=TOL, atol=TOL)


# ---- the transformations themselves ------------------------------------------

def test_value_and_grad_with_argnums_and_nested_containers(rng):
    w = rng.standard_normal((3,))
    params = {"w": arr(w), "b": [arr([0.5]), arr([[1.0, 2.0]])]}

    def loss(p, scale):
        return mx.sum(p["w"] ** 2) * scale + mx.sum(p["b"][0] * 3) + mx.sum(p["b"][1] ** 3)

    value, grads = mx.value_and_grad(loss)(params, arr(2.0))
    assert abs(float(np.array(value)) - (float((w ** 2).sum()) * 2 + 1.5 + 9.0)) < 1e-5
    np.testing.assert_allclose(np.array(grads["w"]), 4 * w, rtol=1e-6)
    np.testing.assert_allclose(np.array(grads["b"][0]), [3.0], rtol=1e-6)
    np.testing.assert_allclose(np.array(grads["b"][1]), [[3.0, 12.0]], rtol=1e-6)
    g_scale = mx.grad(loss, argnums=1)(params, arr(2.0))
    np.testing.assert_allclose(float(np.array(g_scale)), float((w ** 2).sum()), rtol=1e-6)
    gs = mx.grad(loss, argnums=[0, 1])(params, arr(2.0))
    assert isinstance(gs, tuple) and len(gs) == 2


def test_value_and_grad_with_aux_outputs():
    def f(x):
        return mx.sum(x * x), x + 1

    (v, aux), g = mx.value_and_grad(f)(arr([1.0, 2.0]))
    assert float(np.array(v)) == 5.0
    np.testing.assert_allclose(np.array(aux), [2.0, 3.0])
    np.testing.assert_allclose(np.array(g), [2.0, 4.0])


def test_vjp_and_jvp_multiple_outputs():
    f = lambda x, y: [x * y, x + y]
    outs, vjps = mx.vjp(f, [arr([1.0, 2.0]), arr([3.0, 4.0])], [arr([1.0, 1.0]), arr([2.0, 0.5])])
    np.testing.assert_allclose(np.array(vjps[0]), [3 + 2, 4 + 0.5])
    np.testing.assert_allclose(np.array(vjps[1]), [1 + 2, 2 + 0.5])
    outs, jvps = mx.jvp(f, [arr([1.0, 2.0]), arr([3.0, 4.0])], [arr([1.0, 0.0]), arr([0.0, 1.0])])
    np.testing.assert_allclose(np.array(jvps[0]), [3.0, 2.0])
    np.testing.assert_allclose(np.array(jvps[1]), [1.0, 1.0])


def test_grad_of_grad():
    f = lambda x: mx.sum(x ** 3)
    d2 = mx.grad(lambda x: mx.sum(mx.grad(f)(x)))(arr([1.0, -2.0, 0.5]))
    np.testing.assert_allclose(np.array(d2), 6 * np.array([1.0, -2.0, 0.5]), rtol=1e-6)
    d3 = mx.grad(lambda x: mx.sum(mx.grad(lambda y: mx.sum(mx.grad(f)(y)))(x)))(arr([1.0, 2.0]))
    np.testing.assert_allclose(np.array(d3), [6.0, 6.0], rtol=1e-6)


def test_stop_gradient():
    g = mx.grad(lambda x: mx.sum(x * mx.stop_gradient(x)))(arr([2.0, 3.0]))
    np.testing.assert_allclose(np.array(g), [2.0, 3.0])


def test_one_argnum_in_a_sequence_gives_one_gradient_as_mlx(rng):
    """argnums=(0,) or [1]: one gradient, not a tuple of one (MLX's rule)."""
    import mlx.core as mlx_core

    x, y = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    for core, conv in ((mx, arr), (mlx_core, lambda v: mlx_core.array(v.astype(np.float32)))):
        f = lambda a, b: (a * b * b).sum()  # noqa: E731
        for argnums, want in (((0,), y * y), ([1], 2 * x * y)):
            g = core.grad(f, argnums=argnums)(conv(x), conv(y))
            assert not isinstance(g, tuple), (core.__name__, argnums)
            np.testing.assert_allclose(np.array(g), want, rtol=1e-5)
            v, g = core.value_and_grad(f, argnums=argnums)(conv(x), conv(y))
            np.testing.assert_allclose(np.array(g), want, rtol=1e-5)
        assert len(core.grad(f, argnums=(0, 1))(conv(x), conv(y))) == 2


@pytest.mark.parametrize("how", ["take_along_axis", "getitem", "take", "at_add"])
def test_indices_computed_from_the_input_need_stop_gradient_as_in_mlx(rng, how):
    """An index computed from what is differentiated has no gradient: MLX
    raises a ValueError naming stop_gradient, and so does Alloy; with
    stop_gradient both give the gradient through the gathered values."""
    from mlx_oracle import same, same_error

    x = rng.standard_normal((3, 5)).astype(np.float32)

    def loss(m, a, stop):
        def f(s):
            # (Indices within the axis they index: MLX's CPU scatter writes
            # outside the array for others.)
            i = m.argmax(s, axis=1, keepdims=True) if how == "take_along_axis" else m.argmax(s, axis=0)
            i = m.stop_gradient(i) if stop else i
            if how == "take_along_axis":
                return (m.take_along_axis(s, i, axis=1) ** 2).sum()
            if how == "getitem":
                return (s[i] ** 2).sum()
            if how == "take":
                return (m.take(s, i) ** 2).sum()
            return (s.at[i].add(1.0) ** 2).sum()
        return m.grad(f)(a)

    error = same_error(lambda m, a: loss(m, a, False), x)
    assert "stop_gradient" in str(error)
    same(lambda m, a: loss(m, a, True), x)


def test_custom_function_vjp_and_jvp_rules_are_used():
    @mx.custom_function
    def f(x, y):
        return x * y

    calls = []

    @f.vjp
    def f_vjp(primals, cotangent, output):
        calls.append("vjp")
        x, y = primals
        return cotangent * 10 * y, cotangent * 10 * x

    @f.jvp
    def f_jvp(primals, tangents):
        calls.append("jvp")
        x, y = primals
        tx, ty = tangents
        return tx * y * 100 + ty * x * 100

    x, y = arr([1.0, 2.0]), arr([3.0, 4.0])
    np.testing.assert_allclose(np.array(f(x, y)), [3.0, 8.0])
    gx, gy = mx.grad(lambda a, b: mx.sum(f(a, b)), argnums=(0, 1))(x, y)
    np.testing.assert_allclose(np.array(gx), [30.0, 40.0])
    np.testing.assert_allclose(np.array(gy), [10.0, 20.0])
    _, (t,) = mx.jvp(f, [x, y], [arr([1.0, 0.0]), arr([0.0, 1.0])])
    np.testing.assert_allclose(np.array(t), [300.0, 200.0])
    assert calls == ["vjp", "jvp"]


def test_custom_function_outside_transforms_returns_what_its_body_made():
    # As MLX: with no transformation active the body runs as itself, so its
    # outputs come back as the very objects it made; under grad the rule runs.
    made = []

    @mx.custom_function
    def f(x, scale=2.0):
        out = x * scale
        made.append(out)
        return out, {"x": x}

    @f.vjp
    def f_vjp(primals, cotangents, outputs):
        return (cotangents[0] * 7,)

    rng = np.random.default_rng()
    x = arr(rng.standard_normal(4))
    out, extra = f(x, scale=3.0)
    assert out is made[-1] and extra["x"] is x
    np.testing.assert_allclose(np.array(out), np.array(x) * 3.0, rtol=1e-6)
    g = mx.grad(lambda a: mx.sum(f(a)[0]))(x)
    np.testing.assert_allclose(np.array(g), np.full(4, 7.0))

    # A container argument: flattened to find the tracers in it.
    @mx.custom_function
    def h(pair):
        return pair[0] * pair[1]

    @h.vjp
    def h_vjp(primals, cotangent, output):
        return [cotangent * 5, cotangent * 6]

    y = arr(rng.standard_normal(4))
    np.testing.assert_allclose(np.array(h([x, y])), np.array(x) * np.array(y), rtol=1e-6)
    g = mx.grad(lambda a: mx.sum(h([a, y])))(x)
    np.testing.assert_allclose(np.array(g), np.full(4, 5.0))


def test_custom_function_without_rule_differentiates_its_body():
    @mx.custom_function
    def f(x):
        return mx.sin(x) * x

    x = np.array([0.3, -1.2])
    g = mx.grad(lambda a: mx.sum(f(a)))(arr(x))
    np.testing.assert_allclose(np.array(g), np.cos(x) * x + np.sin(x), rtol=1e-5)


# ---- errors --------------------------------------------------------------------

def test_grad_of_non_scalar_output_is_value_error():
    with pytest.raises(ValueError, match="scalar"):
        mx.grad(lambda x: x * 2)(arr([1.0, 2.0]))


def test_errors_leave_earlier_results_intact():
    a = arr([1.0, 2.0]) * 3
    mx.eval(a)
    with pytest.raises(ValueError):
        mx.grad(lambda x: x)(arr([1.0, 2.0]))
    np.testing.assert_allclose(np.array(a), [3.0, 6.0])


# ---- the seed: grad through the custom VJP kernel -----------------------------

def test_seed_grid_sample_grad_matches_autodiff_of_reference(rng):
    import grid_sample as seed
    # W and H even: the seed's kernel scales by the integer W / 2 and H / 2.
    x_np = rng.standard_normal((2, 8, 10, 5)).astype(np.float32)
    g_np = (rng.random((2, 4, 6, 2)) * 2.4 - 1.2).astype(np.float32)  # some outside the image
    w_np = rng.standard_normal((2, 4, 6, 5)).astype(np.float32)
    x, g, w = mx.array(x_np), mx.array(g_np), mx.array(w_np)
    gk = mx.grad(lambda a, b: mx.sum(seed.grid_sample(a, b) * w), argnums=(0, 1))(x, g)
    gr = mx.grad(lambda a: mx.sum(seed.grid_sample_ref(a, g) * w))(x)
    np.testing.assert_allclose(np.array(gk[0]), np.array(gr), rtol=1e-4, atol=1e-4)
    # d/dgrid through the reference is refused, as by MLX: it gathers at
    # indices computed from the grid.
    with pytest.raises(ValueError, match="stop_gradient"):
        mx.grad(lambda b: mx.sum(seed.grid_sample_ref(x, b) * w))(g)
    # The kernel's d/dgrid against central differences of the float64
    # reference, away from pixel boundaries (where the derivative jumps).
    from shared_fixtures import grid_sample_grid_grad_numeric

    want, smooth = grid_sample_grid_grad_numeric(x_np, g_np, w_np)
    np.testing.assert_allclose(np.array(gk[1])[smooth], want[smooth], rtol=1e-3, atol=1e-3)


# MLX differentiates with respect to integer and boolean inputs too (the
# backward pass runs in their dtypes); Alloy used to refuse them.
INTEGER_GRADS = [
    lambda m, x: m.grad(lambda v: (v * 2).sum())(x),
    lambda m, x: m.grad(lambda v: (v * v).sum())(x),
    lambda m, x: m.grad(lambda v: (v.astype(m.float32) * 1.5).sum())(x),
    lambda m, x: m.value_and_grad(lambda v: (v * 3).sum())(x),
    lambda m, x: m.grad(lambda v: m.maximum(v, 2).sum())(x),
    lambda m, x: m.grad(lambda v: v[1] * 3)(x),
    lambda m, x: m.grad(lambda v: m.cumsum(v)[-1])(x),
    lambda m, x: m.grad(lambda v, w: (v * w).sum(), argnums=1)(x.astype(m.float32) * 0.5, x),
]


@pytest.mark.parametrize("dtype", ["int32", "uint8", "int64", "bool_"])
@pytest.mark.parametrize("case", range(len(INTEGER_GRADS)))
def test_integer_and_boolean_inputs_have_gradients_as_in_mlx(rng, dtype, case):
    from mlx_oracle import same
    x = rng.integers(0, 5, size=(4,))
    x = (x > 2) if dtype == "bool_" else x.astype(dtype)
    if dtype == "bool_" and case == 6:
        # A known difference: MLX's cumsum VJP leaves a bool input's gradient
        # int32 (4, 3, 2, 1 here); Alloy's is cast to the input's dtype.
        g = INTEGER_GRADS[case](mx, mx.array(x))
        assert g.dtype == mx.bool_ and np.array(g).all()
        return
    same(lambda m, v: INTEGER_GRADS[case](m, v), x)
