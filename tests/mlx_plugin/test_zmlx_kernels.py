"""ZMLX 0.10's Metal kernel library on real MLX with alloy.mlx, imported as its
users do (`import zmlx`, nothing patched): its elementwise, rowwise-reduction,
scan, softmax, norm, loss, GLU, RoPE and gather kernels, built from MSL text
with synchronising macros of its own header (`KK_SIMD_REDUCE_SUM`), against
MLX's own ops on the same inputs (float32, computed by MLX's CPU or CUDA
backend) and, for the reductions, float64 numpy."""
import numpy as np
import pytest

import mlx.core as mx
import mlx.nn as nn

try:
    from zmlx.kernels import activations, fused, indexing, loss, norms, reductions, rope, scan, softmax, transformer
except ImportError as e:  # not a skip: the Makefile's venv step installs it
    raise ImportError(f"{e}: these tests need ZMLX: pip install --no-deps 'zmlx==0.10.0'") from e


def arr(rng, *shape, scale=1.0):
    return mx.array((scale * rng.standard_normal(shape)).astype(np.float32))


def close(got, want, tol=2e-5):
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=tol, atol=tol)


ELEMENTWISE = {
    "exp": (activations.exp, mx.exp),
    "tanh": (activations.tanh, mx.tanh),
    "sigmoid": (activations.sigmoid, mx.sigmoid),
    "relu": (activations.relu, nn.relu),
    "silu": (activations.silu, nn.silu),
    "gelu_tanh": (activations.gelu_tanh, nn.gelu_approx),
    "softplus": (activations.softplus, nn.softplus),
    "mish": (activations.mish, nn.mish),
    "elu": (activations.elu, nn.elu),
}


@pytest.mark.parametrize("name", list(ELEMENTWISE))
def test_elementwise(rng, name):
    build, ref = ELEMENTWISE[name]
    x = arr(rng, 3, 1000, scale=2.0)
    # gelu_approx is MLX's tanh form; ZMLX's constants differ in the last bits.
    close(build()(x), ref(x), tol=1e-3 if name == "gelu_tanh" else 2e-5)


@pytest.mark.parametrize("D", [7, 256, 1000, 4099])  # below, at and past a threadgroup's 256
def test_rowwise_reductions(rng, D):
    x = arr(rng, 5, D)
    x64 = np.array(x).astype(np.float64)
    for got, want in ((reductions.sum_lastdim(x), x64.sum(-1)), (reductions.mean_lastdim(x), x64.mean(-1)),
                      (reductions.max_lastdim(x), x64.max(-1)), (reductions.var_lastdim(x), x64.var(-1)),
                      (reductions.std_lastdim(x), x64.std(-1))):
        np.testing.assert_allclose(np.array(got).reshape(-1), want, rtol=1e-5, atol=1e-5)
    assert np.array_equal(np.array(reductions.argmax_lastdim(x)).reshape(-1), x64.argmax(-1))
    vals, idx = reductions.topk_lastdim(x, 4)
    want_idx = np.argsort(-x64, axis=-1)[:, :4]
    np.testing.assert_allclose(np.sort(np.array(vals), -1), np.sort(np.take_along_axis(x64, want_idx, -1), -1),
                               rtol=1e-6, atol=1e-6)


def test_cumsum_softmax_and_loss(rng):
    x = arr(rng, 4, 777)
    close(scan.cumsum_lastdim(x), mx.cumsum(x, axis=-1), tol=1e-4)
    close(softmax.softmax_lastdim(x), mx.softmax(x, axis=-1), tol=1e-6)
    close(softmax.log_softmax_lastdim(x), x - mx.logsumexp(x, axis=-1, keepdims=True), tol=1e-5)
    targets = mx.array(rng.integers(0, 777, 4).astype(np.uint32))
    want = nn.losses.cross_entropy(x, targets.astype(mx.int32), reduction="none")
    np.testing.assert_allclose(np.array(loss.softmax_cross_entropy(x, targets)).reshape(-1), np.array(want),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("D", [64, 1000])
def test_norms(rng, D):
    x, res, w, b = arr(rng, 6, D), arr(rng, 6, D), arr(rng, D), arr(rng, D)
    close(norms.rmsnorm(x, w, eps=1e-6), mx.fast.rms_norm(x, w, 1e-6), tol=1e-5)
    close(norms.layernorm(x, w, b, eps=1e-5), mx.fast.layer_norm(x, w, b, 1e-5), tol=1e-5)
    close(norms.rms_norm_no_weight(x, eps=1e-6), mx.fast.rms_norm(x, None, 1e-6), tol=1e-5)
    close(norms.layer_norm_no_weight(x, eps=1e-5), mx.fast.layer_norm(x, None, None, 1e-5), tol=1e-5)
    normed, h = norms.add_rms_norm(x, res, w, eps=1e-6)
    close(h, x + res)
    close(normed, mx.fast.rms_norm(x + res, w, 1e-6), tol=1e-5)


def test_glu_bias_and_gather(rng):
    x = arr(rng, 3, 2 * 300)
    a, g = x[..., :300], x[..., 300:]
    close(transformer.swiglu(x), nn.silu(a) * g, tol=1e-5)
    close(transformer.geglu(x), nn.gelu_approx(a) * g, tol=1e-3)
    y, bias = arr(rng, 3, 300), arr(rng, 300)
    close(fused.add()(y, a), y + a)
    close(fused.mul()(y, a), y * a)
    close(fused.bias_silu(c=300, compute_dtype=mx.float32)(y, bias), nn.silu(y + bias), tol=1e-5)
    src, other = arr(rng, 50, 64), arr(rng, 9, 64)
    idx = mx.array(rng.integers(0, 50, 9).astype(np.uint32))
    close(indexing.fused_gather_add(src, idx, other), src[idx.astype(mx.int32)] + other)


def test_rope(rng):
    S, D = 12, 64
    x = arr(rng, 2, 3, S, D)
    angles = rng.uniform(0, 2 * np.pi, (S, D // 2)).astype(np.float32)
    cos, sin = mx.array(np.cos(angles)), mx.array(np.sin(angles))
    got = rope.apply_rope(x, cos, sin)
    # Non-interleaved halves: (x1, x2) -> (x1 cos - x2 sin, x1 sin + x2 cos).
    x1, x2 = x[..., : D // 2], x[..., D // 2:]
    want = mx.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)
    close(got, want, tol=1e-5)
