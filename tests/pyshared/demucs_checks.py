"""demucs-mlx 1.6.1's fused Metal kernels (`demucs_mlx/metal_kernels.py`:
GLU in scalar and float4 forms, GroupNorm + GELU, GroupNorm + GLU, complex
to interleaved channels, the overlap-add of audio chunks) run unchanged:
float64 references and the calls both hosts share, Alloy's own path
(tests/python/test_real_mlx_demucs.py) and alloy.mlx on real MLX
(tests/mlx_plugin/test_demucs_mlx.py). The file picks its kernels when
`mx.metal.is_available()` answers true at import (HAS_METAL) and otherwise
runs its own composed ops, which the tests also compare with.
"""
import math

import numpy as np

_erf = np.frompyfunc(math.erf, 1, 1)


def glu64(x, axis):
    a, b = np.split(np.asarray(x, np.float64), 2, axis=axis)
    return a / (1 + np.exp(-b))


def group_norm64(x, weight, bias, groups, eps):
    x = np.asarray(x, np.float64)
    B, C = x.shape[:2]
    xr = x.reshape(B, groups, -1)
    normed = (xr - xr.mean(-1, keepdims=True)) / np.sqrt(xr.var(-1, keepdims=True) + eps)
    shape = [1, C] + [1] * (x.ndim - 2)
    return normed.reshape(x.shape) * np.reshape(weight, shape) + np.reshape(bias, shape)


def gelu64(x):
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)).astype(np.float64))


def overlap_add64(frames, window, step, total):
    frames = np.asarray(frames, np.float64)
    chunks, chunk_len = frames.shape[0], frames.shape[-1]
    flat = frames.reshape(chunks, -1, chunk_len)
    out = np.zeros((flat.shape[1], total))
    weight = np.zeros(total)
    for k in range(chunks):
        n = min(chunk_len, total - k * step)
        if n > 0:
            out[:, k * step:k * step + n] += flat[k, :, :n] * window[:n]
            weight[k * step:k * step + n] += window[:n]
    out = np.where(weight > 1e-11, out / np.where(weight > 1e-11, weight, 1), 0)
    return out.reshape(*frames.shape[1:-1], total)


# name: (inputs(rng) -> list of numpy arrays, call(module, mx, numpy inputs),
# float64 reference(numpy inputs)).
# GLU's float4 form runs when the size after the axis is a multiple of 4.
def _glu(shape, axis):
    return (lambda rng: [rng.standard_normal(shape).astype(np.float32)],
            lambda m, mx, a: m.fused_glu(mx.array(a[0]), axis=axis),
            lambda a: glu64(a[0], axis))


def _norm(shape, groups, fn):
    def inputs(rng):
        C = shape[1]
        return [(rng.standard_normal(shape) * 2 + 0.5).astype(np.float32),
                rng.uniform(0.5, 1.5, C).astype(np.float32), rng.standard_normal(C).astype(np.float32)]
    if fn == "gelu":
        return (inputs, lambda m, mx, a: m.fused_groupnorm_gelu(*(mx.array(x) for x in a), groups),
                lambda a: gelu64(group_norm64(a[0], a[1], a[2], groups, 1e-5)))
    return (inputs, lambda m, mx, a: m.fused_groupnorm_glu(*(mx.array(x) for x in a), groups),
            lambda a: glu64(group_norm64(a[0], a[1], a[2], groups, 1e-5), 1))


def _interleave(shape):
    def call(m, mx, a):
        return m.fused_complex_to_interleaved(mx.array(a[0]) + 1j * mx.array(a[1]))
    return (lambda rng: [rng.standard_normal(shape).astype(np.float32) for _ in range(2)], call,
            lambda a: np.stack([a[0], a[1]], axis=2).reshape(shape[0], 2 * shape[1], *shape[2:]).astype(np.float64))


def _overlap(chunks, channels, chunk_len, step, total):
    def inputs(rng):
        window = np.hanning(chunk_len + 2)[1:-1].astype(np.float32)
        return [rng.standard_normal((chunks, *channels, chunk_len)).astype(np.float32), window]
    return (inputs, lambda m, mx, a: m.fused_overlap_add(mx.array(a[0]), mx.array(a[1]), step, total),
            lambda a: overlap_add64(a[0], a[1].astype(np.float64), step, total))


CASES = {
    "glu_vec4": _glu((2, 48, 64), 1),
    "glu_scalar_last_axis": _glu((3, 5, 38), -1),
    "groupnorm_gelu_ncl": _norm((2, 48, 100), 4, "gelu"),
    "groupnorm_gelu_nchw": _norm((2, 16, 9, 13), 2, "gelu"),
    "groupnorm_glu": _norm((2, 64, 75), 1, "glu"),  # the kernel only for one group
    "complex_to_interleaved": _interleave((2, 3, 17, 11)),
    "overlap_add": _overlap(5, (2, 3), 400, 300, 1500),
    "overlap_add_short_total": _overlap(4, (2,), 128, 100, 350),
}

# GroupNorm + GELU's kernel computes erf by Abramowitz-Stegun (its comment:
# ~1.5e-7); everything else rounds float32 sums.
RTOL, ATOL = 1e-5, 2e-6


def check_against_float64(got, inputs, reference):
    want = reference(inputs)
    got = np.asarray(got, np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL * max(1.0, np.abs(want).max()))
