"""qqmm and gather_qqmm (both operands rounded through nvfp4/mxfp8/mxfp4)
against real MLX.

MLX's CPU build runs qqmm only for a single row of x times a packed weight
(else "[QQMatmul] NYI for the general case"), so that case is compared
directly; every other case is compared with a float64 product of the operands
as MLX itself rounds them (its quantize/dequantize, which test_mlx_quant
compares with Alloy's bit for bit).
"""
import mlx.core as mlx_core
import numpy as np
import pytest

import alloy.core as mx
from mlx_oracle import random_array, same, same_error, to_numpy

MODES = ["nvfp4", "mxfp8", "mxfp4"]
FLOATS = ["float32", "float16", "bfloat16"]
EPS = {"float32": 2.0**-23, "float16": 2.0**-10, "bfloat16": 2.0**-7}


def rounded(a, mode, dtype, global_scale=None):
    """a quantized along its last axis and back by MLX, as float64."""
    m = mlx_core
    rows = a.shape[0]
    # Rows twice over: MLX 0.32.4's packing fails on an odd number of nvfp4
    # groups in total (e.g. one row of 48); rows round independently.
    a = m.array(np.concatenate([a, a]))
    g = None if global_scale is None else m.array(global_scale)
    q = m.quantize(a, mode=mode, global_scale=g)
    back = m.dequantize(*q, mode=mode, global_scale=g, dtype=getattr(m, dtype))
    return to_numpy(back).astype(np.float64)[:rows]


def reference(x, w, mode, gsx=None, gsw=None):
    """float64 x_rounded @ w_rounded.T for float operands (w: (N, K))."""
    return rounded(x, mode, x.dtype.name, gsx) @ rounded(w, mode, w.dtype.name, gsw).T


def assert_close(got, exact, x_dtype, scale, what):
    """got (in x_dtype) equals the float64 exact product up to the output's
    rounding and a float32 sum's error."""
    err = np.abs(to_numpy(got).astype(np.float64) - exact)
    bound = EPS[x_dtype] * np.abs(exact) + 1e-5 * scale + 1e-6
    assert np.all(err <= bound), f"{what}: max error {err.max()} (bound {bound[np.argmax(err - bound)]})"


def magnitudes(x, w):
    return np.abs(np.asarray(x, np.float64)) @ np.abs(np.asarray(w, np.float64)).T


@pytest.mark.parametrize("mode", MODES)
def test_single_row_against_mlx(rng, mode):
    """The case MLX's CPU build runs: one row of x, a packed weight."""
    for dtype in FLOATS:
        k = int(rng.choice([64, 128, 48])) if mode == "nvfp4" else int(rng.choice([64, 128]))
        w = (rng.standard_normal((8, k)) * np.exp(rng.uniform(-3, 3, (8, 1)))).astype(np.float32)
        for shape in [(k,), (1, k)]:
            x = random_array(rng, shape, dtype)

            def f(m, x, w):
                return m.qqmm(x, *m.quantize(w, mode=mode), mode=mode)

            if dtype == "float32":
                same(f, x, w)
                continue
            # MLX's CPU kernel sums 16-bit rows in their own type (off by
            # up to 4% of the largest output here); the dtype and shape come
            # from MLX, the values from float64.
            want = f(mlx_core, mlx_core.array(x), mlx_core.array(w))
            got = f(mx, mx.array(x), mx.array(w))
            assert got.shape == want.shape and got.dtype == getattr(mx, str(want.dtype).split(".")[-1])
            x2 = x.reshape(1, k)
            exact = reference(x2, w, mode).reshape(want.shape)
            assert_close(got, exact, dtype, magnitudes(x2.astype(np.float64), w).reshape(want.shape), mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("packed", [True, False])
def test_general_shapes_against_float64(rng, mode, packed):
    for dtype in FLOATS:
        x = random_array(rng, (2, 3, 64), dtype)
        w = (rng.standard_normal((24, 64)) * np.exp(rng.uniform(-3, 3, (24, 1)))).astype(np.float32)
        if packed:
            got = mx.qqmm(mx.array(x), *mx.quantize(mx.array(w), mode=mode), mode=mode)
        else:
            got = mx.qqmm(mx.array(x), mx.array(w), mode=mode)
        assert got.shape == (2, 3, 24) and got.dtype == getattr(mx, dtype)
        exact = reference(x.reshape(6, 64), w, mode).reshape(2, 3, 24)
        scale = magnitudes(x.reshape(6, 64).astype(np.float64), w).reshape(2, 3, 24)
        assert_close(got, exact, dtype, scale, f"{mode} {dtype} packed={packed}")


def test_nvfp4_global_scales(rng):
    x = random_array(rng, (5, 64))
    w = rng.standard_normal((16, 64)).astype(np.float32)
    gsx = np.array(np.abs(x).max() * rng.uniform(0.5, 2.0), np.float32)
    gsw = np.array(np.abs(w).max() * rng.uniform(0.5, 2.0), np.float32)
    got = mx.qqmm(mx.array(x), mx.array(w), global_scale_x=mx.array(gsx), global_scale_w=mx.array(gsw))
    exact = reference(x, w, "nvfp4", gsx, gsw)
    assert_close(got, exact, "float32", magnitudes(x, w), "nvfp4 with global scales")
    # A packed weight quantized with its global scale gives the same product.
    q = mx.quantize(mx.array(w), mode="nvfp4", global_scale=mx.array(gsw))
    again = mx.qqmm(mx.array(x), *q, global_scale_x=mx.array(gsx), global_scale_w=mx.array(gsw))
    np.testing.assert_allclose(to_numpy(again), to_numpy(got), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", ["nvfp4", "mxfp8"])
def test_gradients_are_qqmms_of_the_cotangent(rng, mode):
    """MLX's rule: dx = qqmm(cot, w.T), dw = qqmm(cot.T, x.T), each operand
    quantized along the contracted axis."""
    x = random_array(rng, (32, 64))
    w = rng.standard_normal((64, 64)).astype(np.float32) * 0.5
    cot = random_array(rng, (32, 64))
    kw = {}
    if mode == "nvfp4" and rng.random() < 0.5:
        kw = dict(global_scale_x=mx.array(np.float32(np.abs(x).max())), global_scale_w=mx.array(np.float32(np.abs(w).max())))

    def loss(x, w):
        return (mx.qqmm(x, w, mode=mode, **kw) * mx.array(cot)).sum()

    dx, dw = mx.grad(loss, argnums=(0, 1))(mx.array(x), mx.array(w))
    assert dx.shape == x.shape and dw.shape == w.shape
    amax = np.float32(np.abs(cot).max()) if kw else None
    gsx = np.array(kw["global_scale_x"]) if kw else None
    gsw = np.array(kw["global_scale_w"]) if kw else None
    want_dx = rounded(cot, mode, "float32", amax) @ rounded(w.T.copy(), mode, "float32", gsw).T
    want_dw = rounded(cot.T.copy(), mode, "float32", amax) @ rounded(x.T.copy(), mode, "float32", gsx).T
    assert_close(dx, want_dx, "float32", magnitudes(cot, w.T), "dx")
    assert_close(dw, want_dw, "float32", magnitudes(cot.T, x.T), "dw")


def test_gradient_rows_must_fill_groups(rng):
    x = mx.array(random_array(rng, (8, 64)))
    w = mx.array(random_array(rng, (32, 64)))
    # Only the wanted gradient is built: dx needs w's 32 rows, dw x's 8.
    dx = mx.grad(lambda x: mx.qqmm(x, w, mode="mxfp8").sum())(x)
    assert dx.shape == x.shape
    with pytest.raises(ValueError, match=r"rows of x: their number \(8\)"):
        mx.grad(lambda w: mx.qqmm(x, w, mode="mxfp8").sum())(w)


def test_gradient_with_packed_weight_names_the_fix(rng):
    x = mx.array(random_array(rng, (4, 64)))
    q = mx.quantize(mx.array(random_array(rng, (8, 64))), mode="mxfp8")
    with pytest.raises(ValueError, match="non-quantized"):
        mx.grad(lambda x: mx.qqmm(x, *q, mode="mxfp8").sum())(x)


@pytest.mark.parametrize("mode", MODES)
def test_gather_qqmm(rng, mode):
    x = random_array(rng, (4, 2, 64), "bfloat16")
    w = rng.standard_normal((3, 8, 64)).astype(np.float32)
    lhs = rng.integers(0, 4, (5,)).astype(np.uint32)
    rhs = rng.integers(0, 3, (5,)).astype(np.uint32)
    for packed in (True, False):
        args = list(mx.quantize(mx.array(w), mode=mode)) if packed else [mx.array(w)]
        got = mx.gather_qqmm(mx.array(x), *args, lhs_indices=mx.array(lhs), rhs_indices=mx.array(rhs), mode=mode)
        assert got.shape == (5, 2, 8) and got.dtype == mx.bfloat16
        for i in range(5):
            exact = reference(x[lhs[i]], w[rhs[i]], mode)
            assert_close(got[i], exact, "bfloat16", magnitudes(x[lhs[i]].astype(np.float64), w[rhs[i]]),
                         f"{mode} packed={packed} entry {i}")
    with pytest.raises(RuntimeError, match="gather_qqmm"):
        mx.grad(lambda x: mx.gather_qqmm(x, mx.array(w), lhs_indices=mx.array(lhs),
                                         rhs_indices=mx.array(rhs), mode=mode).sum())(mx.array(x))


def test_errors_match_mlx(rng):
    x = random_array(rng, (1, 64))
    w = random_array(rng, (8, 64))
    same_error(lambda m, x, w: m.qqmm(x, m.stack([w, w])), x, w)
    same_error(lambda m, x, w: m.qqmm(x.astype(m.int32), w), x, w)
    same_error(lambda m, x, w: m.qqmm(x, w.astype(m.int32)), x, w)
    same_error(lambda m, x, w: m.qqmm(x.astype(m.float64), w), x, w)
    same_error(lambda m, x, w: m.qqmm(x, m.quantize(w, mode="nvfp4")[0]), x, w)
    same_error(lambda m, x, w: m.qqmm(x[:, :32], w), x, w)
    same_error(lambda m, x, w: m.qqmm(x[:, :32], *m.quantize(w, mode="nvfp4")), x, w)
    same_error(lambda m, x, w: m.qqmm(x, w, global_scale_x=m.array(1.0)), x, w)
    same_error(lambda m, x, w: m.qqmm(x, w, mode="mxfp8", global_scale_x=m.array(1.0),
                                      global_scale_w=m.array(1.0)), x, w)
    same_error(lambda m, x, w: m.qqmm(x, w, mode="nvfp5"), x, w)
    same_error(lambda m, x, w: m.qqmm(x, w, mode="affine"), x, w)
    # Where MLX's CPU build only says NYI, Alloy names the bad value.
    with pytest.raises(ValueError, match="group size 16"):
        mx.qqmm(mx.array(x), mx.array(w), group_size=32)
    with pytest.raises(ValueError, match="divisible by the group size 32"):
        mx.qqmm(mx.array(x[:, :48]), mx.array(w[:, :48]), mode="mxfp8")
    with pytest.raises(ValueError, match="gather_qqmm"):
        mx.gather_qqmm(mx.array(x[0]), mx.array(w))
