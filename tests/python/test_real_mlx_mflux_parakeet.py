"""Metal kernels of two more public packages, loaded unchanged from their
installed files with their imports pointed at Alloy (real_mlx_code.py):

- mflux's Qwen-Image 2.1 attention (models/qwen21/.../qwen21_attention.py):
  its prologue kernel `fused_qk_norm_rope` (RMSNorm, RoPE in float32 with
  `#pragma STDC FP_CONTRACT OFF`, and the head-major relayout, reading strided
  views). The attention runs three ways (run_three): Alloy with the kernel,
  Alloy with the file's composed ops, real MLX (CPU: the composed ops).
- parakeet-mlx's local relative-position attention (attention.py): its
  `local_qk_perf` and `local_pv_matmul` kernels. The file has no fallback, so
  each kernel is checked against float64 numpy written from the math, and the
  whole attention block against float64 numpy of its banded attention.
"""
import numpy as np
import pytest

from references64 import check_band_kernels
from real_mlx_code import assert_agree, load, normal, run_three

import alloy.core as ax

# --- mflux: Qwen-Image 2.1's fused Q/K RMSNorm + RoPE prologue ------------------

QWEN21 = "mflux.models.qwen21.model.qwen21_transformer.qwen21_attention"

# Kernel against composed ops: the kernel sums each row's squares by SIMD
# group, the ops in their own order, so the normalised values may differ by
# an ulp. RoPE then subtracts two products of up to ~4 in magnitude; an ulp
# of difference in one factor moves the result by up to ulp(4) = 4 eps
# absolute even where the result is near zero (seed 3863296201 in float16:
# 0.0027 at -0.217), hence atol = 4 eps for the half types.
QWEN21_TOL = {"float32": (2e-5, 2e-5), "bfloat16": (1.6e-2, 4 * 2.0 ** -7), "float16": (2e-3, 4 * 2.0 ** -10)}


@pytest.mark.parametrize("dtype", list(QWEN21_TOL))
@pytest.mark.parametrize("H,D", [(3, 128), (2, 64), (2, 256)], ids=["D128", "D64", "D256"])
@pytest.mark.parametrize("fused_qkv", [False, True], ids=["three_linears", "fused_qkv_views"])
def test_qwen21_attention_prologue(rng, dtype, H, D, fused_qkv):
    B, L = 2, 7
    dim = H * D
    hidden = normal(rng, B, L, dim)
    weights = [normal(rng, dim, dim, scale=dim ** -0.5) for _ in range(4)]  # q, k, v, out
    norms = [1 + 0.2 * normal(rng, D) for _ in range(2)]
    angles = rng.uniform(0, 2 * np.pi, (L, D // 2))
    cos, sin = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)

    def call(m, xs):
        mx = m.mx
        h, wq, wk, wv, wo, nq, nk, c, s = xs
        dt = getattr(mx, dtype)
        a = m.Qwen21Attention(dim=dim, num_heads=H, head_dim=D)
        a.to_q.weight, a.to_k.weight, a.to_v.weight = wq.astype(dt), wk.astype(dt), wv.astype(dt)
        a.to_out[0].weight = wo.astype(dt)
        a.norm_q.weight, a.norm_k.weight = nq.astype(dt), nk.astype(dt)
        if fused_qkv:
            # One projection split three ways: the kernel reads strided views.
            a._qkv_weight = mx.concatenate([wq, wk, wv], axis=0).astype(dt)
        q, k, _ = a._project(h.astype(dt), c, s)
        out = a(h.astype(dt), c, s, None)
        return [x.astype(mx.float32) for x in (q, k, out)]

    results = run_three(QWEN21, call, [hidden, *weights, *norms, cos, sin])
    assert results["kernels launched"] == {"fused_qk_norm_rope"}
    rtol, atol = QWEN21_TOL[dtype]
    assert_agree(results, ["q", "k", "attention"], rtol=rtol, atol=atol)

    # q and k against float64: the inputs as the run rounded them, then
    # RMSNorm (eps 1e-6) and RoPE on pairs (2i, 2i + 1).
    def rounded(a):
        return np.array(ax.array(a).astype(getattr(ax, dtype)).astype(ax.float32)).astype(np.float64)

    h64 = rounded(hidden)
    for name, w, n, got in (("q", weights[0], norms[0], results["kernel"][0]),
                            ("k", weights[1], norms[1], results["kernel"][1])):
        x = (h64 @ rounded(w).T).reshape(B, L, H, D)
        x = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * rounded(n)
        xr, xi = x[..., 0::2], x[..., 1::2]
        c64, s64 = cos[None, :, None].astype(np.float64), sin[None, :, None].astype(np.float64)
        want = np.stack([xr * c64 - xi * s64, xr * s64 + xi * c64], -1).reshape(B, L, H, D).transpose(0, 2, 1, 3)
        tol = {"float32": 1e-4, "bfloat16": 6e-2, "float16": 1e-2}[dtype]
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=f"{name} vs float64")


def test_qwen21_prologue_rounds_each_rope_product(rng):
    """The kernel turns FP_CONTRACT off for its RoPE so that each product
    rounds before the add, as MLX's composed ops do. In float32 with norms
    whose squares sum exactly (multiples of 1/8 up to 2 in magnitude: every
    partial sum is exact in any order) the kernel and the composed ops then
    agree bit for bit."""
    B, L, H, D = 1, 5, 2, 128
    m_kernel = load(QWEN21, "alloy", kernels=True)
    m_ops = load(QWEN21, "alloy", kernels=False)
    q = (rng.integers(-16, 17, (B, L, H * D)) / 8).astype(np.float32)
    k = (rng.integers(-16, 17, (B, L, H * D)) / 8).astype(np.float32)
    nq, nk = normal(rng, D), normal(rng, D)
    angles = rng.uniform(0, 2 * np.pi, (L, D // 2))
    cos, sin = ax.array(np.cos(angles).astype(np.float32)), ax.array(np.sin(angles).astype(np.float32))
    fused = m_kernel.fused_qk_norm_rope(ax.array(q), ax.array(k), ax.array(nq), ax.array(nk), cos, sin, H, D)
    assert fused is not None
    a = m_ops.Qwen21Attention(dim=H * D, num_heads=H, head_dim=D)
    a.norm_q.weight, a.norm_k.weight = ax.array(nq), ax.array(nk)
    for got, x, norm in ((fused[0], q, a.norm_q), (fused[1], k, a.norm_k)):
        x4 = norm(ax.array(x).reshape(B, L, H, D))
        want = ax.transpose(m_ops.Qwen21Attention._apply_rope(x4, cos, sin), (0, 2, 1, 3))
        got, want = np.array(got), np.array(want)
        assert np.array_equal(got, want), f"{int((got != want).sum())} of {got.size} differ"


# --- parakeet-mlx: local relative-position attention ---------------------------

PARAKEET = "parakeet_mlx.attention"


@pytest.fixture(scope="module")
def parakeet():
    m = load(PARAKEET, "alloy", kernels=True)
    return m


# D picks the kernel's threadgroup shape (>= 256, >= 128, >= 32, smaller);
# D 20 leaves remainders for each unrolled loop; S_k > S_q sticks queries right.
@pytest.mark.parametrize("D,w,Sq,Sk", [(256, 3, 9, 9), (128, 5, 12, 12), (64, 2, 7, 10), (20, 4, 6, 6),
                                       (8, 9, 20, 20)])
def test_parakeet_band_kernels(rng, parakeet, D, w, Sq, Sk):
    check_band_kernels(parakeet, ax.array, rng, D, w, Sq, Sk)


def test_parakeet_local_attention_block(rng, parakeet):
    """The whole block (projections, position biases, both kernels, the -inf
    edges of its window, softmax) against float64 numpy of windowed attention
    with relative positions, on a padded sequence with a key mask."""
    B, T, H, Dh = 2, 11, 2, 16
    F = H * Dh
    w = 3
    ctx = (w, w)  # the file adds the position scores by its context's halves: equal halves here
    a = parakeet.RelPositionMultiHeadLocalAttention(H, F, bias=True, context_size=ctx)
    params = {}
    for name in ("linear_q", "linear_k", "linear_v", "linear_out"):
        lin = getattr(a, name)
        params[name] = (normal(rng, F, F, scale=F ** -0.5), normal(rng, F, scale=0.1))
        lin.weight, lin.bias = ax.array(params[name][0]), ax.array(params[name][1])
    wp = normal(rng, F, F, scale=F ** -0.5)
    a.linear_pos.weight = ax.array(wp)
    u, vb = normal(rng, H, Dh, scale=0.1), normal(rng, H, Dh, scale=0.1)
    a.pos_bias_u, a.pos_bias_v = ax.array(u), ax.array(vb)
    x = normal(rng, B, T, F)
    pos = normal(rng, 1, 2 * w + 1, F)  # one embedding per relative offset -w..w
    mask = np.zeros((B, T), bool)
    mask[1, T - 3:] = True  # the second sequence is 3 shorter
    got = np.array(a(ax.array(x), ax.array(x), ax.array(x), pos_emb=ax.array(pos), mask=ax.array(mask)))

    x64 = x.astype(np.float64)

    def lin(name, t):
        W, b = params[name]
        return t @ W.T.astype(np.float64) + b

    heads = lambda t: t.reshape(t.shape[0], -1, H, Dh).transpose(0, 2, 1, 3)
    q, k, v = heads(lin("linear_q", x64)), heads(lin("linear_k", x64)), heads(lin("linear_v", x64))
    p = heads(pos.astype(np.float64) @ wp.T.astype(np.float64))  # (1, H, 2w + 1, Dh)
    want = np.zeros((B, H, T, Dh))
    for b in range(B):
        for i in range(T):
            if mask[b, i]:
                continue  # a masked query's row is all zeros
            offs = [r for r in range(-w, w + 1) if 0 <= i + r < T and not mask[b, i + r]]
            # content (q + u) . k, position (q + v) . p of the offset
            s = np.array([np.einsum("hd,hd->h", q[b, :, i] + u, k[b, :, i + r]) +
                          np.einsum("hd,hd->h", q[b, :, i] + vb, p[0, :, w + r]) for r in offs]) * Dh ** -0.5
            e = np.exp(s - s.max(0))
            want[b, :, i] = np.einsum("rh,rhd->hd", e / e.sum(0), np.stack([v[b, :, i + r] for r in offs]))
    want = want.transpose(0, 2, 1, 3).reshape(B, T, F) @ params["linear_out"][0].T.astype(np.float64)
    want += params["linear_out"][1]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
