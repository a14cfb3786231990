"""float64 references of real packages' kernels, written from their math,
shared by Alloy's own tests and alloy.mlx's: parakeet-mlx's local attention
(`local_qk_perf`, `local_pv_matmul`: query i attends keys S_k - S_q + i - w ..
+ w, queries stuck to the right end), mlx-mfa's Conv3D and its TurboQuant
paged decode, mtplx's decode attention over the last QL positions."""
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


def tq_index64(row, d, bits):
    """The centroid index of element d in one packed K row (mlx-mfa's
    layouts: 4 and 2 bits little end first; 3 bits bit-planar, 12 bytes a
    group of 32)."""
    if bits == 4:
        return (int(row[d // 2]) >> ((d % 2) * 4)) & 15
    if bits == 2:
        return (int(row[d // 4]) >> ((d % 4) * 2)) & 3
    g, lane = d // 32, d % 32
    return sum(((int(row[g * 12 + p * 4 + lane // 8]) >> (lane % 8)) & 1) << p for p in range(3))


def check_tq_decode(module, mx, rng, bits, dtype):
    """mlx-mfa's TurboQuant paged decode (tq_decode_attend: a K-dequant kernel
    and a V-gather kernel over a block table, then MLX's SDPA) against float64
    numpy on the same rounded inputs; table entries past the sequence and
    positions of a partial last block are read as the kernels guard them."""
    nb, bs, Hkv, D, Hq = 6, 16, 2, 64, 4
    pd = module._packed_d(D, bits)
    k_pool = rng.integers(0, 256, (nb, bs, Hkv, pd)).astype(np.uint8)
    v_pool = rng.standard_normal((nb, bs, Hkv, D)).astype(np.float32)
    scales = rng.uniform(0.5, 1.5, (nb, bs, Hkv)).astype(np.float32)
    cent = rng.standard_normal(1 << bits).astype(np.float16)
    table = rng.permutation(nb)[:4].astype(np.int32)
    S = 3 * bs + int(rng.integers(1, bs))  # the last block partial
    q = rng.standard_normal((1, Hq, 1, D)).astype(np.float32)
    dt = getattr(mx, dtype)
    out = module.tq_decode_attend(mx.array(q).astype(dt), mx.array(k_pool), mx.array(v_pool).astype(dt),
                                  mx.array(scales), mx.array(cent), mx.array(table), S, block_size=bs, tq_bits=bits)
    as64 = lambda a: np.array(mx.array(a).astype(dt).astype(mx.float32)).astype(np.float64)  # noqa: E731
    v64, q64 = as64(v_pool), as64(q)[0, :, 0]
    K, V = np.zeros((Hkv, S, D)), np.zeros((Hkv, S, D))
    for s in range(S):
        phys, tok = table[s // bs], s % bs
        for h in range(Hkv):
            row = k_pool[phys, tok, h]
            K[h, s] = [float(cent[tq_index64(row, d, bits)]) * scales[phys, tok, h] for d in range(D)]
            V[h, s] = v64[phys, tok, h]
    K = as64(K.astype(np.float32))  # the kernel writes K in the cache's type
    want = np.zeros((Hq, D))
    for hq in range(Hq):
        h = hq // (Hq // Hkv)
        logits = K[h] @ q64[hq] / np.sqrt(D)
        p = np.exp(logits - logits.max())
        want[hq] = (p / p.sum()) @ V[h]
    got = np.array(out.astype(mx.float32))[0, :, 0]
    tol = {"float16": 2e-3, "bfloat16": 1.5e-2}[dtype]
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def tail_causal_attention(q, k, v, offset, scale, window_start=0):
    """mtplx's decode attention contract: query row j of QL attends keys
    window_start <= n <= offset - QL + j; query head h reads key/value head
    h // (HQ / HK). q (1, HQ, QL, D), k and v (1, HK, N, D)."""
    _, hq, ql, d = q.shape
    group = hq // k.shape[1]
    out = np.zeros(q.shape)
    for h in range(hq):
        for j in range(ql):
            n = offset - ql + j + 1
            s = k[0, h // group, window_start:n] @ q[0, h, j] * scale
            p = np.exp(s - s.max())
            out[0, h, j] = (p / p.sum()) @ v[0, h // group, window_start:n]
    return out
