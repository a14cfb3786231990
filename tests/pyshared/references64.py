"""float64 references of real packages' kernels, written from their math,
shared by Alloy's own tests and alloy.mlx's: parakeet-mlx's local attention
(`local_qk_perf`, `local_pv_matmul`: query i attends keys S_k - S_q + i - w ..
+ w, queries stuck to the right end) and mlx-mfa's Conv3D."""
import numpy as np


def band_qk64(q, k, w):
    """out[b, h, i, r] = q[b, h, i] . k[b, h, S_k - S_q + i + r - w], -inf off the keys."""
    B, H, Sq, D = q.shape
    Sk = k.shape[2]
    out = np.full((B, H, Sq, 2 * w + 1), -np.inf)
    for r in range(2 * w + 1):
        j = Sk - Sq + np.arange(Sq) + r - w
        ok = (j >= 0) & (j < Sk)
        out[:, :, ok, r] = np.einsum("bhid,bhid->bhi", q[:, :, ok], k[:, :, j[ok]])
    return out


def band_pv64(p, v, w):
    """out[b, i, h, :] = sum_r p[b, h, i, r] v[b, h, S_v - S_p + i + r - w] over the values that exist."""
    B, H, Sp, _ = p.shape
    Sv, Dv = v.shape[2], v.shape[3]
    out = np.zeros((B, Sp, H, Dv))
    for r in range(2 * w + 1):
        j = Sv - Sp + np.arange(Sp) + r - w
        ok = (j >= 0) & (j < Sv)
        out[:, ok] += np.einsum("bhi,bhid->bihd", p[:, :, ok, r], v[:, :, j[ok]])
    return out


def conv3d64(x, w, pads):
    """Channels-last 3-D convolution in float64: x (B, T, H, W, C), w (O, KT,
    KH, KW, C), pads ((t0, t1), (h0, h1), (w0, w1)); stride and dilation 1."""
    xp = np.pad(x.astype(np.float64), ((0, 0), *pads, (0, 0)))
    win = np.lib.stride_tricks.sliding_window_view(xp, w.shape[1:4], axis=(1, 2, 3))
    return np.einsum("bthwcijk,oijkc->bthwo", win, w.astype(np.float64))


def check_band_kernels(module, array, rng, D, w, Sq, Sk):
    """parakeet's `matmul_qk` and `matmul_pv` of a RelPositionMultiHeadLocalAttention
    of `module` (the file loaded against a framework whose `array` makes its
    arrays) against band_qk64 and band_pv64 on fresh inputs."""
    B, H = 2, 3
    q = rng.standard_normal((B, H, Sq, D)).astype(np.float32)
    k = rng.standard_normal((B, H, Sk, D)).astype(np.float32)
    attn = module.RelPositionMultiHeadLocalAttention(H, H * D, context_size=(w, w))
    got = np.array(attn.matmul_qk(array(q), array(k), w))
    want = band_qk64(q.astype(np.float64), k.astype(np.float64), w)
    assert got.shape == want.shape
    assert np.array_equal(np.isinf(got), np.isinf(want))
    np.testing.assert_allclose(got[np.isfinite(want)], want[np.isfinite(want)], rtol=1e-5, atol=1e-5)

    p = rng.random((B, H, Sq, 2 * w + 1)).astype(np.float32)
    v = rng.standard_normal((B, H, Sk, D)).astype(np.float32)
    got = np.array(attn.matmul_pv(array(p), array(v), w))
    np.testing.assert_allclose(got, band_pv64(p.astype(np.float64), v.astype(np.float64), w), rtol=1e-5, atol=1e-5)
