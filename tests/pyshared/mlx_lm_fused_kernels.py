"""mlx-lm's fused Metal kernels (mlx_lm/kernels/, which its muse_spark model
calls with no ops fallback) and the packed ternary matmuls of BitNet's
layers (mlx-lm's models/bitlinear_layers.py and mlx-vlm's
models/bitnet/bitlinear.py, no fallback either), each checked against a
float64 numpy reference written here from what its docstring and source say
it computes.

Both Python suites run these cases: tests/python on Alloy's own metal_kernel,
tests/mlx_plugin on real MLX with alloy.mlx. A case takes the kernel modules
(as loaded by the suite), the framework's `mx` and a seeded generator, runs
the kernel on fresh random inputs, and returns its outputs beside the
reference's. Shapes are chosen to reach each kernel's partial paths: head
and row sizes that are not multiples of 32, threadgroups of one and of
several SIMD groups, strided inputs where the kernel reads strides.
"""
import math

import numpy as np

# {short name: the installed module}.
MODULES = {name: "mlx_lm.kernels." + name for name in ["qk_norm", "qk_norm_rope", "rms_norm_sigmoid_gate",
                                                       "expert_routing", "norm_add_norm", "post_expert_norm_combine"]}
MODULES["bitlinear_layers"] = "mlx_lm.models.bitlinear_layers"
# mlx-vlm's BitNet carries its own BitLinear: the same packing, another kernel
# (a SIMD group of 32 threads per four output rows, reduced with simd_sum).
MODULES["vlm_bitlinear"] = "mlx_vlm.models.bitnet.bitlinear"

# (rtol, atol) by the kernel's element type: float32 sums over up to 2048
# values in another order than float64; half and bfloat16 round once or
# twice per output.
TOLERANCE = {"float32": (1e-5, 1e-5), "float16": (2e-3, 2e-3), "bfloat16": (1e-2, 1e-2)}


def _round(x, dtype):
    """float64 values rounded to the kernel's element type `dtype` and back."""
    if dtype == "float32":
        return np.float32(x).astype(np.float64) if np.isscalar(x) else np.asarray(x, np.float32).astype(np.float64)
    import ml_dtypes

    np_type = np.float16 if dtype == "float16" else ml_dtypes.bfloat16
    return np.asarray(x).astype(np_type).astype(np.float64)


def _input(mx, values, dtype):
    """A framework array of `values` (float32 numpy) in `dtype`, and the
    float64 values it holds."""
    a = mx.array(values.astype(np.float32)).astype(getattr(mx, dtype))
    return a, _round(values, dtype)


def _numpy(mx, a):
    return np.array(a.astype(mx.float32)).astype(np.float64)


def _rms(v, eps):
    return v / np.sqrt(np.mean(v * v, axis=-1, keepdims=True) + eps)


def qk_norm(mods, mx, rng, dtype="float32", D=80, HQ=4, HK=2):
    qkvg_np = rng.standard_normal((2, 5, 2 * (HQ + HK) * D)).astype(np.float32)
    qkvg, x = _input(mx, qkvg_np, dtype)
    eps, scale = 1e-6, 0.125
    q, k = mods["qk_norm"].qk_norm(qkvg, n_heads=HQ, n_kv_heads=HK, head_dim=D, eps=eps, query_scale=scale)
    heads = x[..., : (HQ + HK) * D].reshape(2, 5, HQ + HK, D)
    y = _round(_rms(heads, eps), dtype)
    want_q = _round(y[:, :, :HQ] * np.float32(scale), dtype)
    want_k = y[:, :, HQ:]
    return [("q", _numpy(mx, q), want_q), ("k", _numpy(mx, k), want_k)]


def qk_norm_rope(mods, mx, rng, dtype="float32", D=48, HQ=3, HK=1, offsets=(3,)):
    B, L = 2, 5
    qkvg_np = rng.standard_normal((B, L, 2 * (HQ + HK) * D)).astype(np.float32)
    qkvg, x = _input(mx, qkvg_np, dtype)
    eps, scale, base = 1e-6, 0.25, 10000.0
    offset = offsets[0] if len(offsets) == 1 else mx.array(np.array(offsets, np.int32))
    q, k = mods["qk_norm_rope"].qk_norm_rope(qkvg, n_heads=HQ, n_kv_heads=HK, head_dim=D, eps=eps, query_scale=scale,
                                             rope_base=base, offset=offset)
    heads = x[..., : (HQ + HK) * D].reshape(B, L, HQ + HK, D)
    y = _round(_rms(heads, eps), dtype)
    y[:, :, :HQ] = _round(y[:, :, :HQ] * np.float32(scale), dtype)
    # mx.fast.rope(traditional=True): pairs (2j, 2j+1) turn by pos * base^(-j / (D/2)).
    pos = np.arange(L)[None, :] + np.array(offsets if len(offsets) > 1 else offsets * B)[:, None]
    j = np.arange(D // 2)
    theta = pos[:, :, None, None] * np.exp2(-(j / (D // 2)) * math.log2(base))
    c, s = np.cos(theta), np.sin(theta)
    even, odd = y[..., 0::2], y[..., 1::2]
    out = np.empty_like(y)
    out[..., 0::2] = even * c - odd * s
    out[..., 1::2] = even * s + odd * c
    out = _round(out, dtype)
    return [("q", _numpy(mx, q), out[:, :, :HQ]), ("k", _numpy(mx, k), out[:, :, HQ:])]


def rms_norm_sigmoid_gate(mods, mx, rng, dtype="float32", D=40, strided=True):
    B, H, L = 2, 3, 5
    eps = 1e-5
    # The attention output as attention leaves it: (B, L, H, D) seen as
    # (B, H, L, D), not row-contiguous; the gate a slice of a wider row.
    x_np = rng.standard_normal((B, L, H, D)).astype(np.float32)
    g_np = rng.standard_normal((B, L, 2 * H * D)).astype(np.float32)
    x_blhd, x = _input(mx, x_np, dtype)
    g_wide, g = _input(mx, g_np, dtype)
    x_in = x_blhd.transpose(0, 2, 1, 3) if strided else mx.contiguous(x_blhd.transpose(0, 2, 1, 3))
    g_in = g_wide[..., : H * D] if strided else mx.contiguous(g_wide[..., : H * D])
    out = mods["rms_norm_sigmoid_gate"].rms_norm_sigmoid_gate(x_in, g_in, eps=eps)
    normed = _rms(x, eps)  # (B, L, H, D)
    gate = 1 / (1 + np.exp(-g[..., : H * D].reshape(B, L, H, D)))
    want = _round(normed * gate, dtype).reshape(B, L, H * D)
    return [("out", _numpy(mx, out), want)]


def expert_routing(mods, mx, rng, E=40, K=4):
    N = 7
    logits_np = rng.standard_normal((N, E)).astype(np.float32)
    bias_np = (0.1 * rng.standard_normal(E)).astype(np.float32)
    mult, score_eps, scale = 1.5, 1e-20, 2.5
    inds, weights = mods["expert_routing"].expert_routing(mx.array(logits_np), mx.array(bias_np), top_k=K,
                                                          multiplier=mult, score_eps=score_eps, route_scale=scale)
    assert inds.dtype == mx.uint32 and tuple(inds.shape) == (N, K), (inds.dtype, inds.shape)
    got_inds = np.array(inds).astype(np.int64)
    score = 1 / (1 + np.exp(-(logits_np.astype(np.float64) * mult)))
    biased = score + bias_np
    want_inds = np.argsort(-biased, axis=-1, kind="stable")[:, :K]  # ties: the lower index, as the kernel
    rows = np.arange(N)[:, None]
    # The experts chosen, in order: their biased scores equal the reference's
    # top K (a float32 near-tie may swap two; the values then still agree).
    chosen = [("biased score of each chosen expert", biased[rows, got_inds], biased[rows, want_inds])]
    w = score[rows, got_inds]
    want_w = w / (w.sum(-1, keepdims=True) + score_eps) * scale
    return chosen + [("weights", _numpy(mx, weights), want_w)]


def norm_add_norm(mods, mx, rng, dtype="float32", D=1000, post_scale=True, pre=True):
    rows = 3
    nn = mods["norm_add_norm"].nn
    post_eps, pre_eps = 1e-5, 1e-6
    branch, b = _input(mx, rng.standard_normal((rows, D)).astype(np.float32), dtype)
    st_np = rng.standard_normal((rows, D)).astype(np.float32)
    al_np, be_np, pw_np, nw_np = (rng.standard_normal(D).astype(np.float32) for _ in range(4))
    norm = None
    if pre:
        norm = nn.RMSNorm(D, eps=pre_eps)
        norm.weight = mx.array(nw_np)
    new_stream, normed = mods["norm_add_norm"].norm_add_norm(
        branch, mx.array(st_np), alpha=mx.array(al_np), beta=mx.array(be_np),
        post_weight=mx.array(pw_np) if post_scale else None, post_eps=post_eps, next_norm=norm)
    v = _round(_round(pw_np, dtype) * b, dtype) if post_scale else b
    n = _round(_rms(v, post_eps), dtype)
    s = al_np.astype(np.float64) * st_np + be_np * n
    out = [("new_stream", _numpy(mx, new_stream), s)]
    if pre:
        out.append(("normed", _numpy(mx, normed), _round(_rms(s, pre_eps) * nw_np, dtype)))
    else:
        assert normed is None
    return out


def pre_norm(mods, mx, rng, dtype="float32", D=2048):
    nn = mods["norm_add_norm"].nn
    st_np = rng.standard_normal((3, D)).astype(np.float32)
    norm = nn.RMSNorm(D, eps=1e-6)
    w_np = rng.standard_normal(D).astype(np.float32)
    norm.weight = mx.array(w_np)
    out = mods["norm_add_norm"].pre_norm(mx.array(st_np), norm, dtype=getattr(mx, dtype))
    return [("normed", _numpy(mx, out), _round(_rms(st_np.astype(np.float64), 1e-6) * w_np, dtype))]


def post_expert_norm_combine(mods, mx, rng, dtype="float32", D=512, K=4):
    eps = 1e-6
    experts, x = _input(mx, rng.standard_normal((2, 3, K, D)).astype(np.float32), dtype)
    weights, ew = _input(mx, rng.random((2, 3, K)).astype(np.float32), dtype)
    w_np = rng.standard_normal(D).astype(np.float32)
    out = mods["post_expert_norm_combine"].post_expert_norm_combine(experts, weights, norm_weight=mx.array(w_np),
                                                                    eps=eps)
    acc = np.zeros((2, 3, D))
    for k in range(K):  # in order, rounded to T after each add, as the kernel
        acc = _round(acc + _rms(x[..., k, :] * w_np, eps) * ew[..., k, None], dtype)
    return [("out", _numpy(mx, out), acc)]


def bitlinear(mods, mx, rng, dtype="float32", in_features=200, out_features=24, invert=False,
              module="bitlinear_layers"):
    """BitLinear: weights of -1, 0, 1 packed four rows to a byte (row r + i *
    out/4 in bits 2i..2i+1 of byte row r), times a weight scale, plus bias."""
    layer = mods[module].BitLinear(in_features, out_features, bias=True, invert_weight_scales=invert)
    packed = rng.integers(0, 256, (out_features // 4, in_features)).astype(np.uint8)
    scale = np.array([rng.uniform(0.5, 2.0)], np.float32)
    bias = rng.standard_normal(out_features).astype(np.float32)
    layer.weight = mx.array(packed)
    layer.weight_scale, s = _input(mx, scale, dtype)
    layer.bias = mx.array(bias)
    x, xv = _input(mx, rng.standard_normal((2, 3, in_features)).astype(np.float32), dtype)
    y = layer(x)
    w = np.concatenate([((packed >> (2 * i)) & 3).astype(np.float64) - 1 for i in range(4)])  # (out, in)
    want = _round((xv @ w.T) * (1 / s[0] if invert else s[0]), dtype)
    # The kernel's output is the scaled product, rounded once to `dtype`;
    # the bias is added after it in float32. Compared before the bias, so the
    # tolerance is relative to what the kernel rounded: a product a float32
    # sum puts one bfloat16 step from float64's rounds there, and after a bias
    # of the opposite sign that step can be 5% of a small y (seed 4037828993).
    return [("y - bias", _numpy(mx, y) - bias.astype(np.float64), want)]


# (id, case, keyword arguments): every kernel of the six files, and its
# threadgroup shapes (row_threads: one SIMD group up to D = 511, three at
# D = 1000, eight at 2048; the expert combine twice that).
CASES = [
    ("qk_norm-f32-D80", qk_norm, {}),
    ("qk_norm-bf16-D64", qk_norm, {"dtype": "bfloat16", "D": 64}),
    ("qk_norm_rope-f32-D48", qk_norm_rope, {}),
    ("qk_norm_rope-f16-offsets", qk_norm_rope, {"dtype": "float16", "D": 64, "offsets": (2, 7)}),
    ("rms_norm_sigmoid_gate-strided", rms_norm_sigmoid_gate, {}),
    ("rms_norm_sigmoid_gate-contiguous-bf16", rms_norm_sigmoid_gate,
     {"dtype": "bfloat16", "D": 64, "strided": False}),
    ("expert_routing-E40", expert_routing, {}),
    ("expert_routing-E256-K8", expert_routing, {"E": 256, "K": 8}),
    ("norm_add_norm-D1000", norm_add_norm, {}),
    ("norm_add_norm-D256-noscale", norm_add_norm, {"D": 256, "post_scale": False}),
    ("norm_add-D2048-bf16", norm_add_norm, {"dtype": "bfloat16", "D": 2048, "pre": False}),
    ("pre_norm-D2048", pre_norm, {}),
    ("pre_norm-D200-f16", pre_norm, {"dtype": "float16", "D": 200}),
    ("post_expert_norm_combine-D512", post_expert_norm_combine, {}),
    ("post_expert_norm_combine-D64-K2-f16", post_expert_norm_combine, {"dtype": "float16", "D": 64, "K": 2}),
    ("bitlinear-f32", bitlinear, {}),
    ("bitlinear-f16-inverted", bitlinear, {"dtype": "float16", "in_features": 512, "out_features": 8, "invert": True}),
    # (in_features a multiple of 4: the kernel reads x four at a time.)
    ("vlm-bitlinear-f32", bitlinear, {"module": "vlm_bitlinear", "in_features": 1000, "out_features": 12}),
    ("vlm-bitlinear-bf16-inverted", bitlinear,
     {"module": "vlm_bitlinear", "dtype": "bfloat16", "in_features": 256, "out_features": 8, "invert": True}),
]


# Absolute tolerance of a case whose float32 sums cancel: BitLinear's dot
# products of 200-512 terms of size ~1 land near 0 with an error of ~1e-5.
SUM_ATOL = {bitlinear: 1e-4}


def check(case, kwargs, mods, mx, rng):
    """Runs one case and asserts every output against its reference."""
    dtype = kwargs.get("dtype", "float32")
    rtol, atol = TOLERANCE[dtype]
    atol = max(atol, SUM_ATOL.get(case, 0.0))
    for name, got, want in case(mods, mx, rng, **kwargs):
        assert got.shape == want.shape, (name, got.shape, want.shape)
        assert np.isfinite(got).all(), f"{name}: non-finite values"
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=name)
