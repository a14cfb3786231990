"""More of ZMLX 0.10's Metal kernel library on real MLX with alloy.mlx,
imported as its users do (`from zmlx.kernels import ...`, nothing patched):
attention (logsumexp, masked softmax, a 16x16 QK tile, paged attention), bit
packing, DeltaNet's conv1d+SiLU and gated RMSNorm, the naive fused linears,
image resize and depthwise conv, SKV's quantized rank-space KV, VLSP's
recurrent step, depth gate and GRPO normalisation, AdamW, the quantization
kernels (int8/int4/NF4/FP8/block-wise/MLX affine-packed dequant and quantized
SwiGLU GEMVs with progressive refinement), the DSL activations with their custom VJPs and
the "discovered" GLM kernels.

Each kernel runs on fresh random inputs (the `rng` fixture prints its seed)
at sizes that leave partial threadgroups / SIMD groups, and is compared with
a float64 numpy reference written here from what the function documents, or
with MLX's own ops on the same inputs. Every call also checks that ZMLX
launched the kernel it is meant to (its launch counter moved) and that the
kernel is Alloy's (alloy.mlx._ext.MetalKernel), so no test passes on a
fallback path."""
import numpy as np
import pytest

import mlx.core as mx
import mlx.nn as nn


import alloy.mlx  # noqa: F401  (before ZMLX builds its kernels)

try:
    from zmlx.kernels import (activations_dsl, attention, bits, deltanet, image, linear, moe, optimizers, quant,
                              skv, vlsp)
    from zmlx.kernels.discovered import glm_fused_swiglu, glm_moe_combine, glm_rmsnorm, glm_topk_gating
except ImportError as e:  # not a skip: the Makefile's venv step installs it
    raise ImportError(f"{e}: these tests need ZMLX: pip install --no-deps 'zmlx==0.10.0'") from e

from zmlx_checks import (FLOATS, TOL, arr, check_topk, close, deepseek_scores, f64,  # noqa: E402
                         gather_setup, gelu_tanh64, launched, sigmoid64, silu64, softmax64)

# ---------------------------------------------------------------------------
# attention
# ---------------------------------------------------------------------------

# Below, at and past the threadgroup of 256.
@pytest.mark.parametrize("D,dtype", [(7, mx.float32), (256, mx.bfloat16), (1000, mx.float16), (1000, mx.float32)])
def test_logsumexp_lastdim(rng, D, dtype):
    x = arr(rng, 2, 3, D, dtype=dtype, scale=3.0)
    got = launched("kk_logsumexp", attention.logsumexp_lastdim, x)
    x64 = f64(x)
    m = x64.max(-1, keepdims=True)
    close(got, (m + np.log(np.exp(x64 - m).sum(-1, keepdims=True)))[..., 0], dtype)


@pytest.mark.parametrize("D,dtype", [(33, mx.float32), (300, mx.float16)])
def test_masked_and_scaled_softmax(rng, D, dtype):
    x = arr(rng, 5, D, dtype=dtype, scale=2.0)
    m = rng.random((5, D)) < 0.6
    m[:, rng.integers(0, D)] = True  # every row keeps an entry
    mask = mx.array(m)
    x64 = f64(x)

    def ref(scale):
        z = np.where(m, x64 * scale, -np.inf)
        return np.where(m, softmax64(z), 0.0)

    close(launched("kk_masked_softmax", attention.masked_softmax, x, mask), ref(1.0), dtype)
    close(launched("kk_scale_mask_softmax", attention.scale_mask_softmax, x, mask, 0.37), ref(0.37), dtype)
    # And against MLX's own softmax where every entry is kept.
    full = mx.ones((5, D), dtype=mx.bool_)
    want = mx.softmax(x.astype(mx.float32) * 0.37, axis=-1)
    close(attention.scale_mask_softmax(x, full, 0.37), f64(want), dtype)


@pytest.mark.parametrize("D", [24, 64, 100])
def test_attention_tile_proto(rng, D):
    q, k = arr(rng, 16, D), arr(rng, 16, D)
    got = launched("kk_attention_tile_proto", attention.attention_tile_proto, q, k)
    close(got, f64(q) @ f64(k).T, mx.float32, tol=1e-5)
    with mx.stream(mx.cpu):  # MLX's CUDA backend runs float32 matmul on TF32
        close(got, f64(q @ k.T), mx.float32, tol=1e-5)


def paged_attention_ref(q, kc, vc, table, lens, scale):
    B, H, D = q.shape
    _, BS, HKV, _ = kc.shape
    G = H // HKV
    out = np.zeros_like(q)
    for b in range(B):
        n = lens[b]
        tok = np.arange(n)
        phys = table[b, tok // BS]
        for h in range(H):
            keys = kc[phys, tok % BS, h // G]
            vals = vc[phys, tok % BS, h // G]
            p = softmax64(keys @ q[b, h] * scale)
            out[b, h] = p @ vals
    return out


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16])
@pytest.mark.parametrize("tg", [256, 32])  # context longer than the threadgroup with 32
def test_paged_attention(rng, dtype, tg):
    B, H, HKV, D, BS, NB, MB = 3, 4, 2, 40, 16, 10, 4
    q = arr(rng, B, H, D, dtype=dtype)
    kc, vc = arr(rng, NB, BS, HKV, D, dtype=dtype), arr(rng, NB, BS, HKV, D, dtype=dtype)
    table = np.stack([rng.permutation(NB)[:MB] for _ in range(B)]).astype(np.int32)
    lens = np.array([1, 37, MB * BS], dtype=np.int32)
    got = launched("kk_paged_attention", attention.paged_attention, q, kc, vc, mx.array(table), mx.array(lens),
                   threadgroup=tg)
    close(got, paged_attention_ref(f64(q), f64(kc), f64(vc), table, lens, 1 / np.sqrt(D)), dtype)
    got = attention.paged_attention(q, kc, vc, mx.array(table), mx.array(lens), 0.2, threadgroup=tg)
    close(got, paged_attention_ref(f64(q), f64(kc), f64(vc), table, lens, 0.2), dtype)


# ---------------------------------------------------------------------------
# bits
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("n_bytes", [1, 37, 300])
def test_pack_unpack_bits(rng, n_bytes):
    b = rng.random(8 * n_bytes) < 0.5
    packed = launched("kk_pack_bits", bits.pack_bits, mx.array(b))
    want = np.packbits(b, bitorder="little")
    assert packed.dtype == mx.uint8 and np.array_equal(np.array(packed), want)
    # Non-zero uint8 counts as a set bit.
    u = rng.integers(0, 4, (n_bytes, 8)).astype(np.uint8)
    assert np.array_equal(np.array(bits.pack_bits(mx.array(u))), np.packbits(u != 0, bitorder="little"))
    raw = rng.integers(0, 256, n_bytes).astype(np.uint8)
    unpacked = launched("kk_unpack_bits", bits.unpack_bits, mx.array(raw), (n_bytes, 8))
    assert unpacked.dtype == mx.uint8 and unpacked.shape == (n_bytes, 8)
    assert np.array_equal(np.array(unpacked), np.unpackbits(raw, bitorder="little").reshape(n_bytes, 8))


# ---------------------------------------------------------------------------
# deltanet
# ---------------------------------------------------------------------------

# CD <= 256 (one threadgroup a batch row), and CD = 512 with 3 rows. (With
# B * CD not a multiple of the threadgroup, ZMLX's guard against the rounded
# grid compares with threads_per_grid, which is the rounded size: its extra
# threads would write past the outputs, so those shapes are not used.)
@pytest.mark.parametrize("B,KS,CD,dtype", [(1, 4, 100, mx.float32), (3, 4, 100, mx.float16),
                                            (3, 3, 512, mx.float32), (2, 4, 37, mx.float16)])
def test_fused_conv1d_silu(rng, dtype, B, KS, CD):
    x = arr(rng, B, KS, CD, dtype=dtype)
    w = arr(rng, CD, 1, KS, 1, dtype=dtype, scale=0.5)
    out, state = launched("kk_fused_conv1d_silu", deltanet.fused_conv1d_silu, x, w)
    x64, w64 = f64(x), f64(w).reshape(CD, KS)
    conv = np.einsum("bkc,ck->bc", x64, w64)[:, None, :]
    close(out, silu64(conv), dtype)
    assert state.dtype == dtype and np.array_equal(f64(state), x64[:, 1:, :])
    # MLX's own depthwise conv1d over the window, then SiLU.
    ref = nn.silu(mx.conv1d(x.astype(mx.float32), w.astype(mx.float32).reshape(CD, KS, 1), groups=CD))
    close(out, f64(ref), dtype)


@pytest.mark.parametrize("shape,dtype", [((1, 1, 4, 24), mx.float32), ((2, 3, 100), mx.bfloat16),
                                         ((3, 1000), mx.float16), ((3, 1000), mx.float32)])
def test_gated_rmsnorm_silu(rng, dtype, shape):
    y, z = arr(rng, *shape, dtype=dtype), arr(rng, *shape, dtype=dtype, scale=2.0)
    w = arr(rng, shape[-1], dtype=dtype, shift=1.0, scale=0.2)
    got = launched("kk_gated_rmsnorm_silu", deltanet.gated_rmsnorm_silu, y, z, w, eps=1e-6)
    y64 = f64(y)
    normed = y64 / np.sqrt((y64 ** 2).mean(-1, keepdims=True) + 1e-6) * f64(w)
    # silu(z) is rounded to the dtype inside the kernel: two roundings.
    close(got, normed * silu64(f64(z)), dtype, tol=2 * TOL[dtype])
    want = mx.fast.rms_norm(y.astype(mx.float32), w.astype(mx.float32), 1e-6) * nn.silu(z.astype(mx.float32))
    close(got, f64(want), dtype, tol=2 * TOL[dtype])


# ---------------------------------------------------------------------------
# linear
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("M,N,K", [(5, 37, 70), (2, 300, 33)])
def test_fused_linear_bias_act(rng, M, N, K):
    x, w, b = arr(rng, M, K), arr(rng, N, K, scale=0.2), arr(rng, N)
    lin = f64(x) @ f64(w).T + f64(b)
    close(launched("kk_linear_bias_act", linear.fused_linear_bias_silu, x, w, b), silu64(lin), tol=1e-5)
    close(launched("kk_linear_bias_act", linear.fused_linear_bias_gelu, x, w, b), gelu_tanh64(lin), tol=1e-5)
    with mx.stream(mx.cpu):  # MLX's CUDA backend runs float32 matmul on TF32
        want = f64(nn.silu(x @ w.T + b))
    close(linear.fused_linear_bias_silu(x, w, b), want, tol=1e-5)


def test_fused_linear_bias_act_two_shapes_same_name(rng):
    """ZMLX names this kernel after the activation only (kk_linear_bias_act_N),
    so two shapes give two sources under one name: each must run its own."""
    for M, N, K in [(3, 20, 16), (4, 9, 50)]:
        x, w, b = arr(rng, M, K), arr(rng, N, K), arr(rng, N)
        close(linear.fused_linear_bias_silu(x, w, b), silu64(f64(x) @ f64(w).T + f64(b)), tol=1e-5)


@pytest.mark.parametrize("M,N,K", [(3, 100, 20), (2, 300, 33)])  # N past the threadgroup of 256
def test_fused_linear_rmsnorm(rng, M, N, K):
    x, w, g = arr(rng, M, K), arr(rng, N, K, scale=0.2), arr(rng, N, shift=1.0, scale=0.3)
    got = launched("kk_linear_rmsnorm", linear.fused_linear_rmsnorm, x, w, g, eps=1e-6)
    lin = f64(x) @ f64(w).T
    close(got, lin / np.sqrt((lin ** 2).mean(-1, keepdims=True) + 1e-6) * f64(g), tol=1e-5)
    with mx.stream(mx.cpu):  # MLX's CUDA backend runs float32 matmul on TF32
        want = f64(mx.fast.rms_norm(x @ w.T, g, 1e-6))
    close(got, want, tol=1e-5)


# ---------------------------------------------------------------------------
# image
# ---------------------------------------------------------------------------

def resize_bilinear_ref(x, OH, OW):
    N, IH, IW, C = x.shape

    def axis(O, I):
        src = (np.arange(O) + 0.5) * (I / O) - 0.5
        i0 = np.floor(src).astype(int)
        frac = src - i0
        return np.clip(i0, 0, I - 1), np.clip(i0 + 1, 0, I - 1), frac

    y0, y1, wy = axis(OH, IH)
    x0, x1, wx = axis(OW, IW)
    wy, wx = wy[None, :, None, None], wx[None, None, :, None]
    g = lambda ys, xs: x[:, ys][:, :, xs]  # noqa: E731
    return (g(y0, x0) * (1 - wy) * (1 - wx) + g(y0, x1) * (1 - wy) * wx
            + g(y1, x0) * wy * (1 - wx) + g(y1, x1) * wy * wx)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16])
@pytest.mark.parametrize("in_hw,out_hw", [((7, 9), (12, 5)), ((5, 6), (10, 12)), ((16, 16), (3, 7))])
def test_resize_bilinear(rng, dtype, in_hw, out_hw):
    x = arr(rng, 2, *in_hw, 3, dtype=dtype)
    got = launched("kk_resize_bilinear", image.resize_bilinear, x, out_hw)
    close(got, resize_bilinear_ref(f64(x), *out_hw), dtype)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16])
@pytest.mark.parametrize("shape", [(2, 9, 11, 5), (1, 4, 3, 33)])
def test_depthwise_conv_3x3(rng, dtype, shape):
    x = arr(rng, *shape, dtype=dtype)
    w = arr(rng, 3, 3, shape[-1], dtype=dtype, scale=0.5)
    got = launched("kk_dw_conv3x3", image.depthwise_conv_3x3, x, w)
    N, H, W, C = shape
    xp = np.pad(f64(x), ((0, 0), (1, 1), (1, 1), (0, 0)))
    want = sum(xp[:, dy:dy + H, dx:dx + W, :] * f64(w)[dy, dx] for dy in range(3) for dx in range(3))
    close(got, want, dtype)
    # MLX's own grouped conv2d (weights C x 3 x 3 x 1).
    ref = mx.conv2d(x.astype(mx.float32), w.astype(mx.float32).transpose(2, 0, 1)[..., None], padding=1, groups=C)
    close(got, f64(ref), dtype)


# ---------------------------------------------------------------------------
# skv
# ---------------------------------------------------------------------------

def skv_quant_ref(kv, basis, bits, gs):
    proj = np.einsum("shd,hdr->shr", kv, basis)
    flat = proj.reshape(-1)
    ng = -(-flat.size // gs)
    padded = np.full(ng * gs, np.nan)
    padded[:flat.size] = flat
    groups = padded.reshape(ng, gs)
    vmin, vmax = np.nanmin(groups, 1), np.nanmax(groups, 1)
    qmax = (1 << bits) - 1
    scale = np.where(vmax > vmin, (vmax - vmin) / qmax, 1.0)
    return proj, scale, vmin


@pytest.mark.parametrize("bits_,gs", [(4, 32), (2, 10), (8, 7)])
def test_skv_project_quantize_roundtrip(rng, bits_, gs):
    S, H, D, R = 13, 2, 24, 6
    kv, basis = arr(rng, S, H, D), arr(rng, H, D, R, scale=0.3)
    st = launched("skv_fused_project_quantize", skv.skv_fused_project_quantize, kv, basis, bits=bits_, group_size=gs)
    proj, scale, vmin = skv_quant_ref(f64(kv), f64(basis), bits_, gs)
    close(st["scales"], scale, mx.float16)
    close(st["zeros"], vmin, mx.float16)
    q = f64(st["q_data"])
    assert st["q_data"].shape == (S, H, R)
    assert np.array_equal(q, np.round(q)) and q.min() >= 0 and q.max() <= (1 << bits_) - 1
    # Affine quantization error within half a step of the (float32) scale.
    g = np.arange(S * H * R) // gs
    err = np.abs(q.reshape(-1) * scale[g] + vmin[g] - proj.reshape(-1))
    assert np.all(err <= scale[g] * 0.5 * (1 + 1e-3) + 1e-5), err.max()

    # Dequantize + unproject, from the kernel's own state.
    out = launched("skv_fused_dequantize_unproject", skv.skv_fused_dequantize_unproject, st, basis)
    coeff = (q.reshape(-1) * f64(st["scales"])[g] + f64(st["zeros"])[g]).reshape(S, H, R)
    close(out, np.einsum("shr,hdr->shd", coeff, f64(basis)), mx.float32, tol=1e-5)


@pytest.mark.parametrize("H,HKV", [(4, 2), (3, 3)])
def test_skv_compressed_attention(rng, H, HKV):
    Q, K, D, R, gs = 5, 11, 16, 8, 12
    kv, basis = arr(rng, K, HKV, D), arr(rng, HKV, D, R, scale=0.3)
    st = skv.skv_fused_project_quantize(kv, basis, bits=8, group_size=gs)
    q_rank = arr(rng, Q, H, R)
    got = launched("skv_compressed_attention", skv.skv_compressed_attention, q_rank, st, num_heads=H,
                   num_kv_heads=HKV, scale=D ** -0.5)
    g = np.arange(K * HKV * R) // gs
    kdeq = (f64(st["q_data"]).reshape(-1) * f64(st["scales"])[g] + f64(st["zeros"])[g]).reshape(K, HKV, R)
    kdeq = np.repeat(kdeq, H // HKV, axis=1)  # (K, H, R)
    want = np.einsum("qhr,khr->hqk", f64(q_rank), kdeq) * D ** -0.5
    close(got, want, mx.float32, tol=1e-5)


# ---------------------------------------------------------------------------
# vlsp
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [mx.float32, mx.float16])
@pytest.mark.parametrize("shape", [(3, 100), (2, 2, 1000)])
def test_vlsp_fused_recurrent_step(rng, dtype, shape):
    h, gate = arr(rng, *shape, dtype=dtype), arr(rng, *shape, dtype=dtype)
    w = arr(rng, shape[-1], dtype=dtype, shift=1.0, scale=0.2)
    alpha = mx.array(0.7)
    got = launched("kk_vlsp_recurrent_step", vlsp.fused_recurrent_step, h, w, gate, alpha, eps=1e-6)
    h64 = f64(h)
    normed = h64 / np.sqrt((h64 ** 2).mean(-1, keepdims=True) + 1e-6) * f64(w)
    close(got, h64 + 0.7 * silu64(normed) * f64(gate), dtype)


def test_vlsp_depth_gate_sigmoid(rng):
    x, cot = arr(rng, 777, scale=3.0), arr(rng, 777)
    got = launched("kk_vlsp_depth_gate_K6_fwd", vlsp.depth_gate_sigmoid, x, k_max=6)
    s = sigmoid64(f64(x))
    close(got, 6 * s)
    grad = launched(("kk_vlsp_depth_gate_K6_fwd", "kk_vlsp_depth_gate_K6_bwd"),
                    mx.grad(lambda v: (vlsp.depth_gate_sigmoid(v, k_max=6) * cot).sum()), x)
    close(grad, f64(cot) * 6 * s * (1 - s))
    close(grad, f64(mx.grad(lambda v: (mx.sigmoid(v) * 6 * cot).sum())(x)))


@pytest.mark.parametrize("shape", [(7,), (5, 7), (3, 300)])
def test_vlsp_grpo_advantage_norm(rng, shape):
    r = arr(rng, *shape, shift=0.5, scale=2.0)
    got = launched("kk_vlsp_grpo_adv", vlsp.grpo_advantage_norm, r, eps=1e-6)
    r64 = f64(r).reshape(-1, shape[-1])
    # The kernel's form: (r - mean) * rsqrt(var + eps), population variance.
    want = (r64 - r64.mean(-1, keepdims=True)) / np.sqrt(r64.var(-1, keepdims=True) + 1e-6)
    close(got, want, mx.float32, tol=1e-4, shape=tuple(r64.shape))


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16])
def test_vlsp_silu_mul_residual(rng, dtype):
    g, u, res, cot = (arr(rng, 3, 333, dtype=dtype) for _ in range(4))
    got = launched("kk_vlsp_silu_mul_residual_fwd", vlsp.silu_mul_residual, g, u, res)
    close(got, silu64(f64(g)) * f64(u) + f64(res), dtype)

    def loss(fn):
        return lambda a, b, c: (fn(a, b, c) * cot).astype(mx.float32).sum()

    grads = launched("kk_vlsp_silu_mul_residual_bwd", mx.grad(loss(vlsp.silu_mul_residual), argnums=(0, 1, 2)),
                     g, u, res)
    s = sigmoid64(f64(g))
    c64 = f64(cot)
    close(grads[0], c64 * f64(u) * (s + f64(g) * s * (1 - s)), dtype)
    close(grads[1], c64 * silu64(f64(g)), dtype)
    close(grads[2], c64, dtype)
    if dtype == mx.float32:
        want = mx.grad(loss(lambda a, b, c: nn.silu(a) * b + c), argnums=(0, 1, 2))(g, u, res)
        for got_g, want_g in zip(grads, want):
            close(got_g, f64(want_g))


# ---------------------------------------------------------------------------
# optimizers
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1000, 37])
def test_adamw_step(rng, n):
    p, g, m = arr(rng, n), arr(rng, n), arr(rng, n, scale=0.1)
    v = mx.array(np.abs(rng.standard_normal(n)).astype(np.float32) * 0.01)
    lr, step = mx.array([1e-2]), mx.array([3.0])
    b1, b2, eps, wd = 0.9, 0.99, 1e-8, 0.05
    p1, m1, v1 = launched("kk_adamw", optimizers.adamw_step, p, g, m, v, lr, step, beta1=b1, beta2=b2, eps=eps, wd=wd)
    P, G, M, V = f64(p), f64(g), f64(m), f64(v)
    M1 = b1 * M + (1 - b1) * G
    V1 = b2 * V + (1 - b2) * G * G
    mh, vh = M1 / (1 - b1 ** 3), V1 / (1 - b2 ** 3)
    close(m1, M1, tol=1e-5)
    close(v1, V1, tol=1e-5)
    close(p1, P - 1e-2 * (mh / (np.sqrt(vh) + eps) + wd * P), tol=1e-5)


# ---------------------------------------------------------------------------
# quant
# ---------------------------------------------------------------------------

def test_dequantize_int8_int4_nf4(rng):
    q8 = mx.array(rng.integers(-128, 128, (3, 333)).astype(np.int8))
    scale = mx.array([0.037], dtype=mx.float32)
    val = np.array(q8).astype(np.float64) * np.float32(0.037)
    close(launched("kk_dequant_int8", quant.dequantize_int8, q8, scale), val)
    close(launched("kk_dequant_int8", quant.dequantize_silu_int8, q8, scale), silu64(val))
    close(quant.dequantize_int8(q8, scale, compute_dtype=mx.float16), val, mx.float16)

    packed = rng.integers(0, 256, 301).astype(np.uint8)
    nib = np.stack([packed & 0xF, packed >> 4], -1).reshape(-1).astype(np.float64)  # low nibble first
    close(launched("kk_dequant_int4", quant.dequantize_int4, mx.array(packed), scale), nib * np.float32(0.037))
    # NF4: the module's 16 QLoRA levels (sorted, -1 ... 0 at code 7 ... 1), which the
    # kernel embeds as a `constant float[16]` in its body, looked up per nibble.
    lut = np.array(quant._NF4_TABLE)
    assert lut.shape == (16,) and np.all(np.diff(lut) > 0) and lut[0] == -1 and lut[7] == 0 and lut[15] == 1
    close(launched("kk_dequant_nf4", quant.dequantize_nf4, mx.array(packed), mx.array([1.5])),
          lut[nib.astype(int)] * 1.5)
    close(quant.dequantize_nf4(mx.array(packed), mx.array([1.5]), compute_dtype=mx.bfloat16),
          lut[nib.astype(int)] * 1.5, mx.bfloat16)


@pytest.mark.parametrize("block", [128, 32])
def test_dequantize_blockwise_and_swiglu_quant(rng, block):
    n = 333
    q8 = rng.integers(-128, 128, n).astype(np.int8)
    scales = rng.uniform(0.01, 0.1, -(-2 * n // block)).astype(np.float32)
    s64 = scales.astype(np.float64)
    got = launched("kk_dequant_b8", quant.dequantize_blockwise, mx.array(q8), mx.array(scales), block_size=block)
    close(got, q8 * s64[np.arange(n) // block])
    packed = rng.integers(0, 256, n).astype(np.uint8)
    nib = np.stack([packed & 0xF, packed >> 4], -1).reshape(-1).astype(np.float64)
    got = launched("kk_dequant_b4", quant.dequantize_blockwise, mx.array(packed), mx.array(scales), block_size=block,
                   bits=4)
    close(got, nib * s64[np.arange(2 * n) // block])

    x1, x2 = (rng.integers(-128, 128, (3, 111)).astype(np.int8) for _ in range(2))
    s1, s2 = (rng.uniform(0.005, 0.03, -(-333 // block)).astype(np.float32) for _ in range(2))
    got = launched("kk_swiglu_quant", quant.fused_swiglu_quant, mx.array(x1), mx.array(s1), mx.array(x2),
                   mx.array(s2), block_size=block)
    blk = np.arange(333).reshape(3, 111) // block
    v1, v2 = x1 * s1.astype(np.float64)[blk], x2 * s2.astype(np.float64)[blk]
    # What the kernel's comment says it computes: (v1 * silu(v1)) * v2.
    close(got, v1 * silu64(v1) * v2)


def test_dequantize_fp8(rng):
    allb = np.arange(256, dtype=np.uint8)
    x = mx.array(np.concatenate([allb, rng.integers(0, 256, 77).astype(np.uint8)]))
    scale = mx.array([0.75])
    # e4m3 against MLX's own from_fp8 (same NaN encodings).
    got = f64(launched("kk_dequant_fp8_e4m3", quant.dequantize_fp8, x, scale))
    want = f64(mx.from_fp8(x, dtype=mx.float32)) * 0.75
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[~np.isnan(want)], want[~np.isnan(want)], rtol=1e-7, atol=0)
    # e5m2 is the high byte of an IEEE float16.
    got = f64(launched("kk_dequant_fp8_e5m2", quant.dequantize_fp8, x, scale, variant="e5m2"))
    want = (np.array(x).astype(np.uint16) << 8).view(np.float16).astype(np.float64) * 0.75
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=1e-7, atol=0)


def quantized(rng, rows, cols, bits_, gs, dtype=mx.float32):
    w = arr(rng, rows, cols, dtype=dtype)
    wq, s, b = mx.quantize(w, group_size=gs, bits=bits_)
    return wq, s, b


def unpack_words(wq, bits_):
    """The bits_-wide fields of uint32 words, lowest first (MLX's packing for 2, 4, 8 bits)."""
    w = np.array(wq).astype(np.uint64)
    per = 32 // bits_
    fields = (w[..., None] >> (np.arange(per, dtype=np.uint64) * bits_)) & ((1 << bits_) - 1)
    return fields.reshape(*w.shape[:-1], w.shape[-1] * per).astype(np.float64)


@pytest.mark.parametrize("bits_,gs,dtype", [(4, 64, mx.float32), (2, 32, mx.float32), (8, 128, mx.float32),
                                            (4, 32, mx.float16)])
def test_dequantize_affine_packed(rng, bits_, gs, dtype):
    wq, s, b = quantized(rng, 7, 256, bits_, gs, dtype)
    # Our unpacking agrees with MLX's dequantize (which rounds to the dtype of the scales).
    q = unpack_words(wq, bits_)
    grp = np.arange(256) // gs
    deq = q * f64(s)[:, grp] + f64(b)[:, grp]
    close(mx.dequantize(wq, s, b, group_size=gs, bits=bits_), deq, dtype)
    got = launched("kk_dequant_affine", quant.dequantize_affine_packed, wq, s, b, bits=bits_, group_size=gs)
    close(got, deq, tol=1e-5)
    close(launched("kk_dequant_affine", quant.dequantize_affine_packed_silu, wq, s, b, bits=bits_, group_size=gs),
          silu64(deq), tol=1e-5)
    close(launched("kk_dequant_affine", quant.dequantize_affine_packed_gelu, wq, s, b, bits=bits_, group_size=gs),
          gelu_tanh64(deq), tol=1e-5)
    if bits_ == 4:
        hi = launched("kk_dequant_affine_hi2", quant.dequantize_affine_packed_hi2, wq, s, b, group_size=gs)
        lo = launched("kk_dequant_affine_lo2", quant.dequantize_affine_packed_lo2_delta, wq, s, b, group_size=gs)
        qi = q.astype(np.int64)
        close(hi, (qi & 0xC) * f64(s)[:, grp] + f64(b)[:, grp], tol=1e-5)
        close(lo, (qi & 0x3) * f64(s)[:, grp], tol=1e-5)
        close(hi + lo, deq, tol=1e-5)


def swiglu_gemv_setup(rng, M, N, K, bits_, gs):
    x = arr(rng, M, K, scale=0.5)
    g = quantized(rng, N, K, bits_, gs)
    u = quantized(rng, N, K, bits_, gs)
    return x, g, u


def swiglu_gemv_ref(x, g, u, bits_, gs, part=None):
    """silu(x @ Wg^T) * (x @ Wu^T) with W the dequantized weights, or (part)
    only the high-2-bit part of each weight code plus, per group where
    refine[row, col, group], its low bits."""
    def w_of(t):
        q = unpack_words(t[0], bits_).astype(np.int64)
        grp = np.arange(q.shape[-1]) // gs
        s, b = f64(t[1])[:, grp], f64(t[2])[:, grp]
        return q, s, b

    x64 = f64(x)
    hi_mask = 0xC if bits_ == 4 else 0xC0
    accs = []
    for t in (g, u):
        q, s, b = w_of(t)
        if part is None:
            accs.append(x64 @ (q * s + b).T)
        else:
            hi = x64 @ ((q & hi_mask) * s + b).T
            lo_terms = x64[:, None, :] * ((q & ~hi_mask & ((1 << bits_) - 1)) * s)[None]  # (M, N, K)
            refine = np.repeat(part, gs, axis=-1)  # (M, N, K)
            accs.append(hi + (lo_terms * refine).sum(-1))
    return silu64(accs[0]) * accs[1]


@pytest.mark.parametrize("bits_,gs", [(4, 64), (8, 32)])
def test_fused_quantized_swiglu_gemv(rng, bits_, gs):
    M, N, K = 3, 37, 128
    x, g, u = swiglu_gemv_setup(rng, M, N, K, bits_, gs)
    got = launched("kk_qswiglu_gemv", quant.fused_quantized_swiglu_gemv, x, *g, *u, group_size=gs, bits=bits_)
    close(got, swiglu_gemv_ref(x, g, u, bits_, gs), tol=1e-4)
    # MLX's own quantized matmuls.
    want = nn.silu(mx.quantized_matmul(x, *g, transpose=True, group_size=gs, bits=bits_)) * \
        mx.quantized_matmul(x, *u, transpose=True, group_size=gs, bits=bits_)
    close(got, f64(want), tol=1e-4)


@pytest.mark.parametrize("bits_,gs", [(4, 64), (8, 32)])
@pytest.mark.parametrize("tg", [None, 32])
def test_fused_quantized_swiglu_gemv_progressive(rng, bits_, gs, tg):
    M, N, K = 3, 21, 128
    x, g, u = swiglu_gemv_setup(rng, M, N, K, bits_, gs)
    name = "kk_qswiglu_prog_tg" if tg else "kk_qswiglu_prog_M"
    fn = quant.fused_quantized_swiglu_gemv_progressive
    # epsilon < 0: the high two bits only; epsilon = 0: always refined, the full weights.
    hi_only = np.zeros((M, N, K // gs), dtype=bool)
    close(launched(name, fn, x, *g, *u, group_size=gs, bits=bits_, epsilon=-1.0, threadgroup=tg),
          swiglu_gemv_ref(x, g, u, bits_, gs, part=hi_only), tol=1e-4)
    close(launched(name, fn, x, *g, *u, group_size=gs, bits=bits_, epsilon=0.0, threadgroup=tg),
          swiglu_gemv_ref(x, g, u, bits_, gs), tol=1e-4)
    # A huge epsilon: the error bound never exceeds it.
    close(fn(x, *g, *u, group_size=gs, bits=bits_, epsilon=1e30, threadgroup=tg),
          swiglu_gemv_ref(x, g, u, bits_, gs, part=hi_only), tol=1e-4)


@pytest.mark.parametrize("bits_,gs", [(4, 32), (8, 32)])
def test_fused_quantized_swiglu_gemv_progressive_per_group(rng, bits_, gs):
    M, N, K = 2, 19, 128
    G = K // gs
    x, g, u = swiglu_gemv_setup(rng, M, N, K, bits_, gs)
    # Groups of x scaled down 50 times: their error bound falls well below epsilon
    # (an epsilon between the two classes), the others' well above.
    small = rng.random((M, G)) < 0.5
    small[:, 0], small[:, 1] = True, False
    x = x * mx.array(np.repeat(np.where(small, 0.02, 1.0), gs, axis=-1).astype(np.float32))
    max_low = 3 if bits_ == 4 else 63
    ax = np.abs(f64(x)).reshape(M, 1, G, gs).sum(-1)  # (M, 1, G)
    err = np.maximum(ax * np.abs(f64(g[1]))[None] * max_low, ax * np.abs(f64(u[1]))[None] * max_low)  # (M, N, G)
    eps = float(np.sqrt(err[np.broadcast_to(small[:, None, :], err.shape)].max()
                        * err[np.broadcast_to(~small[:, None, :], err.shape)].min()))
    refine = err > eps
    assert np.array_equal(refine, np.broadcast_to(~small[:, None, :], refine.shape))
    got = launched("kk_qswiglu_prog_pg", quant.fused_quantized_swiglu_gemv_progressive, x, *g, *u, group_size=gs,
                   bits=bits_, epsilon=eps, per_group=True)
    want = swiglu_gemv_ref(x, g, u, bits_, gs, part=refine)
    close(got, want, tol=1e-4)
    # Which groups were refined shows: refining all or none is far off.
    scale = max(1.0, np.abs(want).max())
    for other in (np.ones_like(refine), np.zeros_like(refine)):
        assert np.abs(want - swiglu_gemv_ref(x, g, u, bits_, gs, part=other)).max() > 1e-3 * scale


# ---------------------------------------------------------------------------
# activations_dsl
# ---------------------------------------------------------------------------

DSL_FWD = {
    "exp": (mx.exp, 1e-5), "log": (mx.log, 1e-5), "tanh": (mx.tanh, 1e-5), "sigmoid": (mx.sigmoid, 1e-5),
    "relu": (nn.relu, 0), "relu2": (lambda x: nn.relu(x) ** 2, 1e-6), "silu": (nn.silu, 1e-5),
    "gelu_tanh": (nn.gelu_approx, 1e-3), "softplus": (nn.softplus, 1e-5), "mish": (nn.mish, 1e-5),
    "elu": (nn.elu, 1e-5),
}


@pytest.mark.parametrize("name", list(DSL_FWD))
def test_activations_dsl_forward(rng, name):
    ref, tol = DSL_FWD[name]
    x = arr(rng, 3, 1000, scale=2.0)  # 3000 elements: threadgroups of 512, the last partial
    if name == "log":
        x = mx.abs(x) + 0.01
    got = launched(f"kk_{name}_float32", getattr(activations_dsl, name)(), x)
    close(got, f64(ref(x)), tol=tol or 1e-7)
    # float16 storage with float16 compute.
    xh = x.astype(mx.float16)
    got = launched(f"kk_{name}_float16", getattr(activations_dsl, name)(compute_dtype_key="float16"), xh)
    close(got, f64(ref(xh.astype(mx.float32))), mx.float16, tol=max(tol, 3e-3))


DSL_GRAD = {
    "exp_grad": mx.exp, "tanh_grad": mx.tanh, "sigmoid_grad": mx.sigmoid, "relu_grad": nn.relu,
    "relu2_grad": lambda x: nn.relu(x) ** 2, "silu_grad": nn.silu, "gelu_tanh_grad": nn.gelu_approx,
    "softplus_grad": nn.softplus, "mish_grad": nn.mish, "elu_grad": nn.elu,
}


@pytest.mark.parametrize("name,dtype", [(n, (mx.float32, mx.bfloat16)[i % 2]) for i, n in enumerate(DSL_GRAD)]
                         + [("silu_grad", mx.float32), ("gelu_tanh_grad", mx.bfloat16)])
def test_activations_dsl_vjp(rng, name, dtype):
    ref = DSL_GRAD[name]
    x, cot = arr(rng, 777, scale=2.0, dtype=dtype), arr(rng, 777, dtype=dtype)
    op = getattr(activations_dsl, name)()
    tol = max(TOL[dtype], 1e-3) if name.startswith("gelu") else TOL[dtype]
    close(launched(f"kk_{name}_float32_fwd", op, x), f64(ref(x.astype(mx.float32))), dtype, tol=tol)
    grad = launched(f"kk_{name}_float32_bwd", mx.grad(lambda v: (op(v) * cot).astype(mx.float32).sum()), x)
    want = mx.grad(lambda v: (ref(v) * cot.astype(mx.float32)).sum())(x.astype(mx.float32))
    close(grad, f64(want), dtype, tol=max(tol, 2 * TOL[dtype]))


# ---------------------------------------------------------------------------
# discovered (GLM-4.7-Flash shapes)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [mx.float32, mx.bfloat16])
@pytest.mark.parametrize("lead", [(1,), (3,), (2, 5)])
def test_glm_fused_swiglu(rng, dtype, lead):
    g, u = arr(rng, *lead, 1536, dtype=dtype, scale=2.0), arr(rng, *lead, 1536, dtype=dtype)
    got = launched("kk_discovered_glm_fused_swiglu", glm_fused_swiglu.glm_fused_swiglu, g, u)
    # silu in the dtype's arithmetic, then the product: a few roundings.
    close(got, silu64(f64(g)) * f64(u), dtype, tol=3 * TOL[dtype])
    close(got, f64(nn.silu(g) * u), dtype, tol=3 * TOL[dtype])
    assert glm_fused_swiglu.glm_fused_swiglu(g[..., :64], u[..., :64]) is None


@pytest.mark.parametrize("edtype,wdtype", [(mx.float32, mx.float32), (mx.bfloat16, mx.float32),
                                           (mx.float16, mx.float16)])
def test_glm_moe_combine(rng, edtype, wdtype):
    e = arr(rng, 3, 4, 2048, dtype=edtype)
    w = mx.softmax(arr(rng, 3, 4), axis=-1).astype(wdtype)
    got = launched("kk_discovered_glm_moe_combine", glm_moe_combine.glm_moe_combine, e, w)
    want = (f64(e) * f64(w)[..., None]).sum(-2)
    close(got, want, edtype, tol=(4 if edtype == mx.float16 else 1) * TOL[edtype])
    close(got, f64((e * w[..., None]).sum(-2).astype(edtype)), edtype, tol=2 * TOL[edtype])


@pytest.mark.parametrize("lead", [(1,), (3,), (2, 2)])
def test_glm_rmsnorm(rng, lead):
    x, w = arr(rng, *lead, 2048), arr(rng, 2048, shift=1.0, scale=0.2)
    got = launched("kk_discovered_glm_rmsnorm", glm_rmsnorm.glm_rmsnorm, x, w, eps=1e-5)
    x64 = f64(x)
    close(got, x64 / np.sqrt((x64 ** 2).mean(-1, keepdims=True) + 1e-5) * f64(w), tol=1e-5)
    close(got, f64(mx.fast.rms_norm(x, w, 1e-5)), tol=1e-5)


def test_glm_topk_gating(rng):
    # Each lane of the kernel holds the larger of x[j] and x[j + 32] and drops
    # the other once it wins: the top-4 must lie in distinct lanes (j mod 32),
    # so rows are drawn until they do.
    rows = []
    while len(rows) < 6:
        r = (2.0 * rng.standard_normal(64)).astype(np.float32)
        if len(set(np.argsort(-r)[:4] % 32)) == 4:
            rows.append(r)
    x = mx.array(np.stack(rows).reshape(2, 3, 64))
    idx, w = launched("kk_discovered_glm_topk_gating", glm_topk_gating.glm_topk_gating, x, 4)
    x64 = f64(x)
    check_topk(w, idx, x64, 4, lambda i: softmax64(np.take_along_axis(x64.reshape(-1, 64), i, -1)), "desc")


# ---------------------------------------------------------------------------
# Inputs that are views: offsets, strides, transposes, broadcasts (the
# kernels ask for row-contiguous inputs; what they index must be the view)
# ---------------------------------------------------------------------------

def test_view_inputs(rng):
    D = 300
    big = arr(rng, 9, 2 * D, scale=2.0)
    for x in (big[3:7, :D],        # offset rows, strided
              big[2:, ::2],        # offset, every other column
              arr(rng, D, 5).T,    # transposed
              mx.broadcast_to(arr(rng, 1, D), (4, D))):  # stride 0
        x64 = f64(x)
        m = x64.max(-1, keepdims=True)
        close(launched("kk_logsumexp", attention.logsumexp_lastdim, x),
              (m + np.log(np.exp(x64 - m).sum(-1, keepdims=True)))[:, 0])
        m_row = rng.random(D) < 0.5
        m_row[0] = True
        mask = mx.broadcast_to(mx.array(m_row), x.shape)
        close(launched("kk_masked_softmax", attention.masked_softmax, x, mask),
              np.where(m_row, softmax64(np.where(m_row, x64, -np.inf)), 0.0))

    # A slice at an offset of the packed bits, and of the tokens to dispatch.
    raw = rng.random(8 * 40) < 0.5
    b = mx.array(raw)[8 * 3:]
    assert np.array_equal(np.array(bits.pack_bits(b)), np.packbits(raw[24:], bitorder="little"))
    xs = arr(rng, 7, 40)[2:]
    got = moe.moe_dispatch(xs, mx.zeros((5, 3), dtype=mx.uint32))
    assert np.array_equal(f64(got), np.broadcast_to(f64(xs)[:, None, :], (5, 3, 40)))

    # Expert outputs transposed, weights a strided column pick.
    e = arr(rng, D, 4, 6).transpose(2, 1, 0)  # (6, 4, D)
    wb = mx.softmax(arr(rng, 6, 8), axis=-1)[:, 1::2]  # (6, 4)
    want = (f64(e) * f64(wb)[..., None]).sum(-2)
    close(launched("kk_moe_combine_D", moe.moe_combine, e, wb), want)
    close(launched("kk_moe_combine_fp32_no_fma_row_tile", moe.moe_combine_fp32_no_fma_row_tile, e, wb), want)

    # RMSNorm rows at an offset, the weight a broadcast scalar.
    xr = arr(rng, 5, 2048)[2:]
    w = mx.broadcast_to(mx.array(1.25), (2048,))
    x64 = f64(xr)
    close(launched("kk_discovered_glm_rmsnorm", glm_rmsnorm.glm_rmsnorm, xr, w, eps=1e-6),
          x64 / np.sqrt((x64 ** 2).mean(-1, keepdims=True) + 1e-6) * 1.25, tol=1e-5)
    y, z = arr(rng, 3, 2 * 100)[:, 100:], arr(rng, 100, 3).T
    y64 = f64(y)
    close(launched("kk_gated_rmsnorm_silu", deltanet.gated_rmsnorm_silu, y, z, w[:100]),
          y64 / np.sqrt((y64 ** 2).mean(-1, keepdims=True) + 1e-6) * 1.25 * silu64(f64(z)), tol=1e-5)


@pytest.mark.parametrize("tg", [1, 1024])
def test_threadgroup_sizes(rng, tg):
    """ZMLX's rowwise kernels take any power-of-two threadgroup up to 1024."""
    x = arr(rng, 3, 333, scale=2.0)
    x64 = f64(x)
    m = x64.max(-1, keepdims=True)
    close(launched(f"kk_logsumexp_D333_TG{tg}", attention.logsumexp_lastdim, x, threadgroup=tg),
          (m + np.log(np.exp(x64 - m).sum(-1, keepdims=True)))[:, 0])
    close(launched(f"kk_vlsp_grpo_adv_G333_TG{tg}", vlsp.grpo_advantage_norm, x, threadgroup=tg),
          (x64 - x64.mean(-1, keepdims=True)) / np.sqrt(x64.var(-1, keepdims=True) + 1e-6), tol=1e-4)
    w, idx = launched(f"kk_top2_gating_D333_TG{tg}", moe.top2_gating_softmax, x, threadgroup=tg)
    check_topk(w, idx, x64, 2, lambda i: softmax64(np.take_along_axis(x64, i, -1)), "desc")
    if tg >= 8:  # the group count (8) must fit in the threadgroup
        logits = arr(rng, 2, 256, scale=2.0)
        bias = mx.array(rng.uniform(0, 0.1, 256).astype(np.float32))
        w, idx = launched("kk_deepseek_router_topk_sigmoid", moe.deepseek_router_topk_sigmoid, logits, bias,
                          n_group=8, topk_group=3, threadgroup=tg)
        aff, scores = deepseek_scores(f64(logits), f64(bias), 8, 3)
        check_topk(w, idx, scores, 8, lambda i: (lambda a: a / a.sum(-1, keepdims=True))(
            np.take_along_axis(aff, i, -1)), "desc")


@pytest.mark.parametrize("int_dtype", [mx.int32, mx.uint32, mx.int64])
def test_paged_attention_index_dtypes(rng, int_dtype):
    B, H, HKV, D, BS, NB, MB = 2, 2, 1, 33, 8, 6, 3
    q = arr(rng, B, H, D)
    kc, vc = arr(rng, NB, BS, HKV, D), arr(rng, NB, BS, HKV, D)
    table = np.stack([rng.permutation(NB)[:MB] for _ in range(B)])
    lens = np.array([5, MB * BS])
    got = launched("kk_paged_attention", attention.paged_attention, q, kc, vc, mx.array(table).astype(int_dtype),
                   mx.array(lens).astype(int_dtype))
    close(got, paged_attention_ref(f64(q), f64(kc), f64(vc), table, lens, 1 / np.sqrt(D)))


# ---------------------------------------------------------------------------
# Kernels written to round like MLX's composed ops, bit for bit
# ---------------------------------------------------------------------------

# Alloy's CPU backend compiles a translated kernel with g++ -O2 -march=native
# and, in MLX's default "safe" math mode, no -ffp-contract flag: g++'s C++
# default is -ffp-contract=fast, so `T p = (T)(a * b); T s = (T)(c + p);`
# becomes one FMA, across the statements and through the explicit casts
# (float32 and half). Metal in MLX's safe mode rounds each statement; only
# kernels carrying `#pragma clang fp contract(off)` get that here.
@pytest.mark.parametrize("dtype", [mx.float32, mx.bfloat16, mx.float16])
def test_moe_combine_exact_accumulates_in_its_dtype(rng, dtype):
    """moe_combine_exact: "round after multiply, then after add" in the
    dtype, as MLX's ops `acc = acc + e[..., i, :] * w[..., i, None]` do,
    within the dtype's rounding. Not bit for bit: Metal's safe math mode
    fuses a multiply and an add only within one expression, where g++
    (-ffp-contract=fast) and NVRTC also fuse a product kept in one statement
    with the next statement's add; where the CPU has half arithmetic
    (AVX512-FP16) about a third of the float16 sums then differ from MLX's
    in the last bit (README, known limits)."""
    e = arr(rng, 16, 4, 300, dtype=dtype)
    w = mx.softmax(arr(rng, 16, 4), axis=-1).astype(dtype)
    got = launched("kk_moe_combine_exact", moe.moe_combine_exact, e, w)
    acc = mx.zeros((16, 300), dtype=dtype)
    for i in range(4):
        acc = acc + e[:, i, :] * w[:, i, None]
    assert got.dtype == dtype and got.shape == acc.shape
    # Four steps, each at most one rounding of the dtype apart.
    eps = {mx.float32: 2.0 ** -23, mx.float16: 2.0 ** -10, mx.bfloat16: 2.0 ** -7}[dtype]
    scale = (np.abs(f64(e)) * np.abs(f64(w))[..., None]).sum(axis=1)
    np.testing.assert_array_less(np.abs(f64(got) - f64(acc)), 4 * eps * scale + 1e-30)


def test_no_fma_kernels_round_each_product(rng):
    """The *_no_fma kernels (`#pragma clang fp contract(off)`) round each
    float32 product before adding it, left to right, bit for bit."""
    for K, D in [(4, 300), (8, 40), (8, 1100)]:
        e = rng.standard_normal((6, K, D)).astype(np.float32)
        w = rng.random((6, K)).astype(np.float32)
        want = np.zeros((6, D), dtype=np.float32)
        for i in range(K):
            want = want + w[:, i, None] * e[:, i, :]  # numpy float32: each op rounded
        E, W = mx.array(e), mx.array(w)
        fns = {moe.moe_combine_no_fma: "kk_moe_combine_no_fma_D",
               moe.moe_combine_fp32_no_fma: "kk_moe_combine_fp32_no_fma_D",
               moe.moe_combine_fp32_no_fma_row_tile: "kk_moe_combine_fp32_no_fma_row_tile",
               moe.moe_combine_weighted_sum_fp32_no_fma:
                   "kk_moe_combine_weighted_sum" if K == 8 else "kk_moe_combine_fp32_no_fma_D"}
        for fn, name in fns.items():
            got = np.array(launched(name, fn, E, W))
            assert np.array_equal(got, want), f"{fn.__name__} K={K} D={D}: {(got != want).sum()} elements differ"

    # The streaming gather-combine's no-FMA accumulator, on MLX's own projections.
    B, K, E_, Din, Dout = 3, 4, 6, 48, 300
    act, Wt, gate, idx = gather_setup(rng, B, K, E_, Din, Dout, mx.float32)
    got = np.array(launched("kk_weighted_accumulate_fp32_no_fma", moe.gather_qmm_combine, act, Wt, gate, idx,
                            streaming=True, no_fma=True))
    want = np.zeros((B, Dout), dtype=np.float32)
    for k in range(K):
        proj = np.array(mx.matmul(mx.expand_dims(act[:, k, :], axis=1), Wt[idx[:, k]]).squeeze(axis=1))
        want = want + np.array(gate[:, k])[:, None] * proj
    assert np.array_equal(got, want), f"{(got != want).sum()} elements differ"


@pytest.mark.parametrize("dtype", FLOATS)
def test_glm_moe_combine_rounds_like_mlx_ops(rng, dtype):
    """The discovered GLM combine (`#pragma clang fp contract(off)`): each
    product and partial sum rounded to T, left to right, as MLX's ops do."""
    e = arr(rng, 5, 4, 2048, dtype=dtype)
    w = mx.softmax(arr(rng, 5, 4), axis=-1).astype(dtype)
    got = launched("kk_discovered_glm_moe_combine", glm_moe_combine.glm_moe_combine, e, w)
    acc = e[:, 0, :] * w[:, 0, None]
    for i in range(1, 4):
        acc = acc + e[:, i, :] * w[:, i, None]
    assert np.array_equal(f64(got), f64(acc)), f"{int((f64(got) != f64(acc)).sum())} elements differ"
