"""mlx-vlm's exact speculative-verification kernels and its structured-output
mask, loaded unchanged from the installed package with their imports pointed
at Alloy (real_mlx_code.py):

- mlx_vlm/models/quantized_verifier.py: the affine-quantized verifier heads
  (qmv, argmax and masked argmax, each in its plain, token-tiled and streamed
  form, and the fused projection of 2-4 linears), the NVFP4 argmax head, and
  the quantized MoE down projection fused with the hyper-connection
  expansion (affine, MXFP4, MXFP8, NVFP4 experts) and its epilogue-only
  kernel.
- mlx_vlm/structured.py: the llguidance token-mask kernel.

The verifier functions return None without Metal; their callers then take
the file's own ops (singleton_quantized_linear / _argmax through gather_qmm,
exact_quantized_selected_linear and SwitchGLU._combine). Each test runs that
dispatch three ways on the same fresh random inputs (Alloy with the kernels,
Alloy with the ops, real MLX CPU with the ops) and checks every run against
float64 numpy over the run's own dequantized weights. structured.py has no
fallback: its kernel is checked against numpy alone.
"""
import ml_dtypes
import numpy as np
import pytest

from real_mlx_code import load, normal, run_three

import alloy.core as ax

QV = "mlx_vlm.models.quantized_verifier"
SWITCH_LAYERS = "mlx_vlm.models.switch_layers"

NP_TYPES = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}

# (rtol, atol) of a result rounded once to the dtype against float64: a few
# units in the last place of values of order one. The kernels (float sums,
# one rounding) and Alloy's ops take it.
ROUNDED_ONCE = {"float16": (2e-3, 4e-3), "bfloat16": (1.6e-2, 3e-2)}
# Real MLX's CPU gather_qmm accumulates half and bfloat16 products in the
# dtype itself (measured: errors up to 0.02 in float16 on values near 3 for
# K = 1024, 8 times that in bfloat16): its answer is only roughly float64's.
MLX_CPU_GATHER_QMM = {"float16": (2e-2, 5e-2), "bfloat16": (1e-1, 4e-1)}
RUNS = ("kernel", "alloy_ops", "mlx_ops")


def tolerance(run, dtype, scale=1.0):
    """(rtol, atol) of `run`'s results; `scale` counts the roundings to the
    dtype of values of the result's order (real MLX's bound covers them)."""
    if run == "mlx_ops":
        return MLX_CPU_GATHER_QMM[dtype]
    rtol, atol = ROUNDED_ONCE[dtype]
    return scale * rtol, scale * atol


def rounded(a, dtype):
    """a (float32 numpy) as the framework holds it in `dtype`, in float64."""
    return np.asarray(a).astype(NP_TYPES[dtype]).astype(np.float64)


def quantized_linear(m, w, dtype, bits, group_size, mode="affine", bias=None):
    """The framework's nn.QuantizedLinear holding `w` (out, in) quantized from
    `dtype` (affine scales and biases then in `dtype`, as converted models
    hold them), with an optional float bias."""
    mx = m.mx
    layer = m.nn.QuantizedLinear(w.shape[1], w.shape[0], bias=bias is not None, group_size=group_size,
                                 bits=bits, mode=mode)
    q = mx.quantize(w.astype(getattr(mx, dtype)), group_size=group_size, bits=bits, mode=mode)
    layer.weight, layer.scales = q[0], q[1]
    layer.biases = q[2] if mode == "affine" else None
    if bias is not None:
        layer.bias = bias.astype(getattr(mx, dtype))
    return layer


def dequantized(m, layer):
    """The layer's weights as its codes, scales and biases give them, in float32."""
    mx = m.mx
    if layer.mode == "affine":
        return mx.dequantize(layer.weight, layer.scales.astype(mx.float32), layer.biases.astype(mx.float32),
                             group_size=layer.group_size, bits=layer.bits)
    return mx.dequantize(layer.weight, layer.scales, group_size=layer.group_size, bits=layer.bits,
                         mode=layer.mode, dtype=mx.float32)


def f32(m, a):
    return a.astype(m.mx.float32)


def assert_close_to(results, index, want, dtype, name, scale=1.0):
    """Output `index` of each run against float64 (want(run), over the run's
    own dequantized weights), and the kernel run against each fallback."""
    for run in RUNS:
        rtol, atol = tolerance(run, dtype, scale)
        np.testing.assert_allclose(results[run][index], want(run), rtol=rtol, atol=atol,
                                   err_msg=f"{name}: {run} against float64")
    for fallback in ("alloy_ops", "mlx_ops"):
        rtol, atol = tolerance(fallback, dtype, scale)
        np.testing.assert_allclose(results["kernel"][index], results[fallback][index], rtol=rtol, atol=atol,
                                   err_msg=f"{name}: kernel vs {fallback}")


def assert_launched(results, *prefixes):
    launched = results["kernels launched"]
    for prefix in prefixes:
        assert any(n.startswith(prefix) for n in launched), (prefix, launched)


# --- the affine verifier heads: qmv (plain, streamed, token-tiled) ----------

# (bits, group_size, T, K): which kernel optimized_affine_linear takes is
# fixed by bits and the number of verified tokens T.
AFFINE_CASES = {
    "plain_b4": (4, 64, 3, 1024),  # T < 6: _target_verify_qmv_kernel
    "streamed_b4": (4, 32, 7, 512),  # 4 bits, 6 <= T <= 8: the streamed kernel
    "token_tiled_b4": (4, 128, 9, 1024),  # 4 bits, T > 8: token tiles of 2, one partial
    "plain_b5": (5, 64, 4, 1024),
    "plain_b8": (8, 32, 2, 512),
}
AFFINE_KERNEL = {"plain_b4": "qmv_b", "streamed_b4": "qmv_streamed_b", "token_tiled_b4": "qmv_token_tiled_b",
                 "plain_b5": "qmv_b", "plain_b8": "qmv_b"}
DTYPES = ["float16", "bfloat16"]  # the kernels take the scales' dtype, half or bfloat


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", list(AFFINE_CASES))
def test_optimized_affine_linear(rng, case, dtype):
    """optimized_affine_linear (the quantized LM head or projection over a
    block of draft tokens), with _target_verify_quantized_linear's fallback
    (speculative/ops/linear.py): singleton_quantized_linear."""
    bits, group_size, T, K = AFFINE_CASES[case]
    B, N = 2, 64
    with_bias = bits == 8  # a layer with a float bias: added after the kernel
    xs = [normal(rng, B, T, K), normal(rng, N, K, scale=K**-0.5), normal(rng, N, scale=0.5)]

    def call(m, xs):
        x, w, b = xs
        layer = quantized_linear(m, w, dtype, bits, group_size, bias=b if with_bias else None)
        x = x.astype(getattr(m.mx, dtype))
        out = m.optimized_affine_linear(layer, x)
        if out is None:  # as speculative/ops/linear.py does
            out = m.singleton_quantized_linear(layer, x)
        return [f32(m, out), dequantized(m, layer)]

    results = run_three(QV, call, xs)
    assert_launched(results, f"quantized_verify_affine_{AFFINE_KERNEL[case]}{bits}_gs{group_size}_t{T}")
    x64 = rounded(xs[0], dtype)
    bias64 = rounded(xs[2], dtype) if with_bias else 0.0
    assert_close_to(results, 0, lambda run: x64 @ results[run][1].astype(np.float64).T + bias64, dtype, "y")


# --- the affine verifier heads: greedy argmax, with and without a grammar mask


def allowed_tokens(mask, N):
    """The packed int32 token mask (rows, words) unpacked to (rows, N) booleans."""
    tokens = np.arange(N)
    words = mask.view(np.uint32)[:, tokens // 32]
    return ((words >> (tokens % 32).astype(np.uint32)) & 1).astype(bool)


def check_greedy_picks(results, logits64, allowed, dtype, name):
    """Each run picks a token whose float64 logit is within rounding of the
    best allowed one; the runs pick the same token where the best is clear of
    the second by more than rounding. logits64(run) gives float64 logits of
    shape (B, T, N)."""
    picks = {}
    for run in RUNS:
        rtol, atol = tolerance(run, dtype)
        pick = results[run][0].astype(np.int64)
        masked = np.where(allowed, logits64(run), -np.inf)
        best = masked.max(-1)
        chosen = np.take_along_axis(masked, pick[..., None], -1)[..., 0]
        assert np.isfinite(chosen).all(), f"{name}: {run} picked a masked token"
        slack = 2 * (rtol * np.abs(best) + atol)
        assert (best - chosen <= slack).all(), f"{name}: {run} picked {pick} (logit {chosen}, best {best})"
        picks[run] = pick
    top2 = np.sort(np.where(allowed, logits64("kernel"), -np.inf), axis=-1)[..., -2:]
    for fallback in ("alloy_ops", "mlx_ops"):
        rtol, atol = tolerance(fallback, dtype)
        clear = top2[..., 1] - top2[..., 0] > 4 * (rtol * np.abs(top2[..., 1]) + atol)
        np.testing.assert_array_equal(picks["kernel"][clear], picks[fallback][clear],
                                      err_msg=f"{name}: kernel vs {fallback} where the best is clear")


@pytest.mark.parametrize("masked", [False, True], ids=["greedy", "grammar_mask"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", list(AFFINE_CASES))
def test_optimized_affine_argmax(rng, case, dtype, masked):
    """optimized_affine_argmax: the head's argmax per token without the logits
    (per-tile best values and indices, then a reduction over tiles), with
    _target_verify_quantized_argmax's fallback: singleton_quantized_argmax.

    The grammar mask is packed as llguidance fills it for a tokenizer
    vocabulary (64 tokens) shorter than the head's (72), padded by the file's
    pad_token_mask. Each run's picks are also exactly the (masked) argmax of
    its own logits: the kernel run's from optimized_affine_linear, the same
    arithmetic as the argmax kernel."""
    bits, group_size, T, K = AFFINE_CASES[case]
    B, N = 2, 72
    xs = [normal(rng, B, T, K), normal(rng, N, K, scale=K**-0.5)]
    mask = rng.integers(-(2**31), 2**31, (B * T, 2), dtype=np.int64).astype(np.int32)
    mask[:, 0] |= 1 << int(rng.integers(0, 31))  # at least one token allowed per row
    xs.append(mask)

    def call(m, xs):
        x, w, token_mask = xs
        layer = quantized_linear(m, w, dtype, bits, group_size)
        x = x.astype(getattr(m.mx, dtype))
        token_mask = m.pad_token_mask(token_mask, N) if masked else None
        pick = m.optimized_affine_argmax(layer, x, token_mask=token_mask)
        logits = m.optimized_affine_linear(layer, x)
        if pick is None:  # as speculative/ops/linear.py does
            pick = m.singleton_quantized_argmax(layer, x, token_mask)
            logits = m.singleton_quantized_linear(layer, x)
        return [pick, f32(m, logits), dequantized(m, layer)]

    results = run_three(QV, call, xs)
    kind = "masked_qargmax" if masked else "qargmax"
    variant = AFFINE_KERNEL[case].replace("qmv", kind)
    assert_launched(results, f"quantized_verify_affine_{variant}{bits}_gs{group_size}_t{T}")
    allowed = allowed_tokens(mask, 64) if masked else np.ones((B * T, 64), bool)
    allowed = np.concatenate([allowed, np.full((B * T, N - 64), not masked)], axis=1).reshape(B, T, N)
    for run in RUNS:
        pick, logits = results[run][0], results[run][1]
        np.testing.assert_array_equal(pick, np.argmax(np.where(allowed, logits, -np.inf), axis=-1),
                                      err_msg=f"{run}: picks vs the argmax of its own logits")
    x64 = rounded(xs[0], dtype)
    check_greedy_picks(results, lambda run: x64 @ results[run][2].astype(np.float64).T, allowed, dtype, "argmax")


# --- the affine verifier heads: 2-4 projections of one input in one kernel ---


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bits,group_size,T,n_sizes", [
    (4, 64, 3, (64, 40, 24)),  # _target_verify_fused_qmv_kernel
    (4, 32, 7, (32, 16)),  # 4 bits, T >= 6: the streamed fused kernel
    (5, 128, 4, (48, 48, 16, 8)),
    (8, 64, 2, (24, 64)),
], ids=["plain_b4", "streamed_b4", "plain_b5", "plain_b8"])
def test_optimized_affine_linears(rng, dtype, bits, group_size, T, n_sizes):
    """optimized_affine_linears (e.g. the q, k, v projections of a verified
    block over one input), against _target_verify_linears' fallback, each
    linear through singleton_quantized_linear. Row tiles cross from one
    linear's weights to the next."""
    B, K = 2, 512
    xs = [normal(rng, B, T, K)] + [normal(rng, n, K, scale=K**-0.5) for n in n_sizes]

    def call(m, xs):
        x = xs[0].astype(getattr(m.mx, dtype))
        layers = [quantized_linear(m, w, dtype, bits, group_size) for w in xs[1:]]
        outs = m.optimized_affine_linears(layers, x)
        if outs is None:  # as speculative/ops/linear.py does (per linear)
            outs = [m.singleton_quantized_linear(layer, x) for layer in layers]
        return [f32(m, out) for out in outs] + [dequantized(m, layer) for layer in layers]

    results = run_three(QV, call, xs)
    streamed = "streamed_" if bits == 4 and T >= 6 else ""
    assert_launched(results, f"quantized_verify_affine_fused_qmv_{streamed}b{bits}_gs{group_size}_t{T}")
    x64 = rounded(xs[0], dtype)
    count = len(n_sizes)
    for i in range(count):
        assert_close_to(results, i, lambda run: x64 @ results[run][count + i].astype(np.float64).T, dtype,
                        f"projection {i}")


# --- the NVFP4 verifier head's argmax --------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("K", [512, 384])  # 384: the last block of 256 half full
def test_optimized_nvfp4_argmax(rng, dtype, K):
    """optimized_nvfp4_argmax (FP4 e2m1 codes, e4m3 scales per 16, decoded
    with as_type<half>), against _target_verify_quantized_argmax's fallback:
    singleton_quantized_argmax. The kernel has no logits of its own: the picks
    are checked against float64 logits over each run's dequantized weights."""
    B, T, N = 2, 3, 64
    xs = [normal(rng, B, T, K), normal(rng, N, K, scale=K**-0.5)]

    def call(m, xs):
        x = xs[0].astype(getattr(m.mx, dtype))
        layer = quantized_linear(m, xs[1], dtype, 4, 16, mode="nvfp4")
        pick = m.optimized_nvfp4_argmax(layer, x)
        if pick is None:  # as speculative/ops/linear.py does
            pick = m.singleton_quantized_argmax(layer, x)
        return [pick, dequantized(m, layer)]

    results = run_three(QV, call, xs)
    assert_launched(results, f"quantized_verify_nvfp4_argmax_t{T}_k{K}_n{N}")
    x64 = rounded(xs[0], dtype)
    check_greedy_picks(results, lambda run: x64 @ results[run][1].astype(np.float64).T,
                       np.ones((B, T, N), bool), dtype, "nvfp4 argmax")


# --- the quantized MoE down projection fused with the hyper-connection expansion


# (mode, bits, group_size, K): K a multiple of the kernel's block (32 lanes'
# values) takes the fused projection-and-epilogue kernel; K = 192 does not,
# and the selected experts' gather_qmm feeds the epilogue-only kernel.
MOE_CASES = {
    "affine4": ("affine", 4, 64, 512),
    "affine3": ("affine", 3, 32, 512),
    "affine8": ("affine", 8, 32, 256),
    "mxfp4": ("mxfp4", 4, 32, 512),
    "mxfp8": ("mxfp8", 8, 32, 256),
    "nvfp4": ("nvfp4", 4, 16, 512),
    "affine4_epilogue_only": ("affine", 4, 64, 192),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", list(MOE_CASES))
def test_quantized_moe_hc_expand(rng, case, dtype):
    """exact_quantized_moe_hc_expand as SwitchGLU calls it for a short decode
    block of a DeepSeek-V4-style MoE (4 hyper-connection streams): the down
    projection of each token's top-k experts, weighted by the router, plus
    the shared expert, expanded into the streams (post * collapsed + comb^T @
    residual, an 8x8 simdgroup_matrix product). Fallback as SwitchGLU takes
    it: exact_quantized_selected_linear, then SwitchGLU._combine."""
    mode, bits, group_size, K = MOE_CASES[case]
    B, L, top_k, E, N, HC = 2, 3, 2, 4, 64, 4
    xs = [
        normal(rng, B, L, top_k, K),  # the activated experts' hidden states
        normal(rng, E, N, K, scale=K**-0.5),  # the down projection's experts
        # Distinct experts per token, as top-k routing gives.
        np.stack([rng.permutation(E)[:top_k] for _ in range(B * L)]).reshape(B, L, top_k).astype(np.int32),
        rng.random((B, L, top_k)).astype(np.float32),  # router weights
        normal(rng, B, L, N),  # the shared expert's output
        normal(rng, B, L, HC, N),  # the residual streams
        rng.uniform(0.0, 2.0, (B, L, HC)).astype(np.float32),  # post (2 * sigmoid)
        rng.uniform(0.0, 1.0, (B, L, HC, HC)).astype(np.float32),  # comb
    ]

    def call(m, xs):
        mx = m.mx
        t = getattr(mx, dtype)
        x, w, idx, route, shared, residual, post, comb = xs
        x, shared, residual = x.astype(t), shared.astype(t), residual.astype(t)
        switch_layers = m.__port_loader__.load(SWITCH_LAYERS)  # the class the file checks for
        layer = switch_layers.QuantizedSwitchLinear(K, N, E, bias=False, group_size=group_size, bits=bits,
                                                    mode=mode)
        q = mx.quantize(w.astype(t), group_size=group_size, bits=bits, mode=mode)
        layer.weight, layer.scales = q[0], q[1]
        layer.biases = q[2] if mode == "affine" else None
        out = m.exact_quantized_moe_hc_expand(layer, x, idx, route, shared, residual, post, comb)
        if out is None:  # as SwitchGLU.__call__ does without Metal
            routed = m.exact_quantized_selected_linear(layer, x, idx)
            out = switch_layers.SwitchGLU._combine(routed, route, shared, (residual, post, comb))
        return [f32(m, out), dequantized(m, layer)]

    results = run_three(QV, call, xs)
    if case.endswith("epilogue_only"):
        assert_launched(results, "quantized_verify_moe_hc_expand_")
    else:
        assert_launched(results, f"quantized_verify_fused_{mode}{bits}_moe_hc_")
    x64, shared64, residual64 = (rounded(a, dtype) for a in (xs[0], xs[4], xs[5]))
    idx, route, post, comb = xs[2], xs[3].astype(np.float64), xs[6].astype(np.float64), xs[7].astype(np.float64)

    def want(run):
        experts = results[run][1].astype(np.float64)[idx]  # (B, L, top_k, N, K)
        routed = np.einsum("blsk,blsnk->blsn", x64, experts)
        collapsed = (routed * route[..., None]).sum(2) + shared64
        return post[..., None] * collapsed[:, :, None, :] + np.einsum("bljh,bljn->blhn", comb, residual64)

    # Each route's product, their sum and the shared output are rounded to
    # the dtype before the expansion (in the kernel and in the ops alike).
    assert_close_to(results, 0, want, dtype, "out", scale=3)


# --- mlx_vlm/structured.py: the llguidance token mask -----------------------


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("rows", [3, None])  # None: one sequence's 1-D logits
def test_llguidance_mask(rng, dtype, rows):
    """_apply_llguidance_mask, which LLGuidanceLogitsProcessor applies to
    each step's logits: a token keeps its logit where its bit of the packed
    int32 mask (as llguidance fills it) is set, -inf elsewhere. The model's
    vocabulary (1000, padded) is longer than the tokenizer's the mask covers
    (29 words, 928 tokens): tokens past the mask are -inf. A grid of 1000
    threads in threadgroups of 256. No fallback in the file: against numpy."""
    m = load("mlx_vlm.structured", "alloy", kernels=True)
    V, words = 1000, 29
    shape = (V,) if rows is None else (rows, V)
    logits = normal(rng, *shape, scale=4.0)
    mask = rng.integers(-(2**31), 2**31, (rows or 1, words), dtype=np.int64).astype(np.int32)
    x = ax.array(logits).astype(getattr(ax, dtype))
    out = m._apply_llguidance_mask(x, ax.array(mask if rows else mask[0]))
    assert out.dtype == x.dtype and out.shape == (rows or 1, V)
    allowed = np.concatenate([allowed_tokens(mask, words * 32), np.zeros((rows or 1, V - words * 32), bool)], 1)
    want = np.where(allowed, np.asarray(logits.reshape(rows or 1, V)).astype(NP_TYPES[dtype]).astype(np.float32),
                    -np.inf)
    np.testing.assert_array_equal(np.array(out.astype(ax.float32)), want)
    assert m.__port_loader__.kernels_launched() == {"mlx_vlm_llguidance_mask"}
