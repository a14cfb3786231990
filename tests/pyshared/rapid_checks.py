"""rapid-mlx's own Metal kernels (rapid-mlx 0.16.10): the checks both hosts
share, Alloy's own path (tests/python/test_real_mlx_rapid.py) and alloy.mlx
on real MLX (tests/mlx_plugin/test_rapid.py). The files are loaded unchanged
from the installed package with only their imports pointed at the framework
under test (real_mlx_code.py, kernel_path.py), on fresh random inputs. Each
check calls the file's own Python entry point and checks that its
metal_kernel launched:

- compiled_precision.py: `precise_sigmoid` and `precise_gated_product`
  (Metal's eager sigmoid law with metal::precise::exp) in float32 and
  bfloat16: against the file's stock-sigmoid fallback (on Alloy's suite,
  run_three: kernel, Alloy's mx.sigmoid fallback, real MLX's; on the
  plugin's, kernel and real MLX's fallback) and against float64.
- qwen35_moe_router.py: `fused_router_topk` (SIMD-group top-k of the MoE
  router's probabilities, ascending output order, normalisation in the input
  dtype) against a numpy emulation of the kernel's selection and of its
  bfloat16/float16 sum and division.
- gdn_prefill.py: `gated_delta_blocked_seq` (blocked-sequential Gated
  DeltaNet prefill: threadgroup staging, float4 state fragments,
  simd_shuffle_down reductions), bfloat16 and float32 (TB 32 and 16), against
  the recurrence in float64.
- kernels/qwen4_gdn_verify.py: `gated_delta_verify_with_states` (the verify
  recurrence with rollback states, with and without a mask), against the
  file's own `_reference` ops path (three ways on Alloy's suite), and against
  float64.
- spec_decode/mtp/quantized_argmax.py: `quantized_argmax` (4- and 5-bit
  affine lm-head argmax by tiles, bf16/fp16, the batch-transposed path too)
  against float64 logits of the dequantised weights.
- patches/moe_decode_fusion.py: `route` (gate GEMV with 1 or 8 SIMD groups,
  fused softmax, expert bias, top-k, normalisation) and `combine` (weighted
  expert sum rounded in bfloat16) against float64 / a bfloat16 emulation.
- models/deepseek_v41_native/rope_quant.py: `rope_fake_quant` (RoPE on the
  channel tail, then FP8-ue8m0 / FP4-ue8m0 / FP4-e4m3 block fake
  quantisation, block max by simd_shuffle_xor), against the file's own graph
  path (three ways on Alloy's suite), bit for bit as the file's own
  self-check demands.
- kernels/qwen4_fused_gdn_decode.py: `fused_gdn_decode` (one decode step of
  Qwen4's GDN: causal conv + SiLU, q/k norms, gated delta update, gated RMS
  norm; barriers and simd_sum) at a reduced head count, against a float64
  emulation of its bfloat16 roundings.

The files take their kernels only where `mx.metal.is_available()` (and some
`mx.default_device() == mx.gpu`): on Alloy the loader's view answers so, on
real MLX alloy.mlx does; the ops runs answer "no Metal, CPU".

Each check takes the framework under test ("alloy" or "mlx"), its `mx`, the
rng and the case's parameters.
"""
import importlib
import types

import numpy as np

from kernel_path import kernels_launched as launched
from kernel_path import launches, load_kernel_path, load_ops_path
from real_mlx_code import FRAMEWORKS, assert_agree, normal, run_three, to_framework, to_numpy

F32_EPS = float(np.finfo(np.float32).eps)
BF16_EPS = 2.0 ** -7   # spacing of bfloat16 numbers in [1, 2)
F16_EPS = 2.0 ** -10


def bf16(a):
    """Round to the nearest bfloat16 (ties to even), as float64."""
    a = np.asarray(a, dtype=np.float32)
    bits = a.view(np.uint32).astype(np.uint64)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def f16(a):
    return np.asarray(a, dtype=np.float16).astype(np.float64)


def as_np(a):
    """An array of either framework as float64 numpy (through float32 for the
    half types)."""
    if str(a.dtype).split(".")[-1] in ("bfloat16", "float16"):
        a = a.astype(importlib.import_module(type(a).__module__).float32)
    return np.array(a).astype(np.float64)


def sigmoid64(x):
    x = np.asarray(x, np.float64)
    return np.where(x < 0, np.exp(np.minimum(x, 0)) / (1 + np.exp(np.minimum(x, 0))), 1 / (1 + np.exp(-np.maximum(x, 0))))


def run_paths(framework, module_name, call, inputs):
    """call(module, framework_inputs) on the file's kernel path and on its
    ops fallback; results as numpy, by run ("kernel", then the ops runs), and
    "kernels launched". Alloy: run_three (kernel, Alloy's ops, real MLX's
    ops). Real MLX: the kernel path through alloy.mlx, and real MLX's ops."""
    if framework == "alloy":
        return run_three(module_name, call, inputs)
    results = {}
    for run, load_path in (("kernel", load_kernel_path), ("mlx_ops", load_ops_path)):
        module = load_path(module_name, "mlx")
        results[run] = to_numpy(call(module, to_framework(inputs, "mlx")))
        # The run took the path it was meant to: Metal kernels launched on
        # the kernel run, none on the ops run.
        count = launches(module)
        assert (count > 0) == (run == "kernel"), f"{run}: {count} metal_kernel launches"
        if run == "kernel":
            results["kernels launched"] = launched(module)
    return results


def ops_runs(results):
    return [run for run in ("alloy_ops", "mlx_ops") if run in results]


# --- compiled_precision.py: precise sigmoid and gated product -----------------

CP = "rapid_mlx.compiled_precision"

# The kernel computes y = 1/(1 + exp|x|) and 1 - y in T: exp, the add, the
# division and the subtraction each round once (unit roundoff u = eps/2), so
# the result is within about 4u relative of float64; the gated product adds
# one more rounding. float32: 4u = 2 eps; bfloat16: 4u = 2 * 2^-7.
SIGMOID_RTOL = {"float32": 3 * F32_EPS, "bfloat16": 2 * BF16_EPS}
# x = -88 gives a subnormal sigmoid (6e-39), where numbers are spaced by
# 2^-149 (float32) or 2^-133 (bfloat16): a few of those absolute.
SIGMOID_ATOL = {"float32": 4 * 2.0 ** -149, "bfloat16": 4 * 2.0 ** -133}


def check_precise_sigmoid_and_gated_product(framework, mx, rng, dtype):
    n = 777  # not a multiple of the 256-thread group
    gate = normal(rng, n, scale=4.0)
    # Large magnitudes, zero, and the bfloat16 fast/precise exp edge the file names.
    gate[:6] = [-6.84375, 0.0, 30.0, -30.0, 88.0, -88.0]
    value = normal(rng, n)

    def call(m, xs):
        mx = m.mx
        g, v = (a.astype(getattr(mx, dtype)) for a in xs)
        return [m.precise_sigmoid(g).astype(mx.float32), m.precise_gated_product(g, v).astype(mx.float32)]

    res = run_paths(framework, CP, call, [gate, value])
    assert res["kernels launched"] == {"rapid_precise_sigmoid", "rapid_precise_sigmoid_mul"}
    g64 = gate.astype(np.float64) if dtype == "float32" else bf16(gate)
    v64 = value.astype(np.float64) if dtype == "float32" else bf16(value)
    rtol, atol = SIGMOID_RTOL[dtype], SIGMOID_ATOL[dtype]
    np.testing.assert_allclose(res["kernel"][0], sigmoid64(g64), rtol=rtol, atol=atol)
    np.testing.assert_allclose(res["kernel"][1], v64 * sigmoid64(g64), rtol=rtol * 5 / 4, atol=atol)
    # Against the stock sigmoid of each framework. Real MLX's CPU sigmoid
    # takes a polynomial exp, a few float32 ulps from float64 far in the
    # tails (1.9e-6 relative seen at x = -30), hence 16 eps there.
    assert_agree(res, ["sigmoid", "gated"], rtol=max(2 * rtol, 16 * F32_EPS), atol=atol, fallbacks=ops_runs(res))


# --- qwen35_moe_router.py: fused top-k of the router probabilities ------------

ROUTER = "rapid_mlx.qwen35_moe_router"


def router_reference(probs, top_k, rnd):
    """The kernel's selection: descending by (probability, expert index) --
    within a lane `>=` keeps the last equal value, across lanes simd_max keeps
    the highest index -- written out ascending; the sum of the picks from the
    smallest up and each division rounded in the input dtype (rnd)."""
    rows, ne = probs.shape
    idx = np.zeros((rows, top_k), np.int64)
    scores = np.zeros((rows, top_k))
    for r in range(rows):
        order = np.lexsort((np.arange(ne), probs[r]))  # ascending by (value, index)
        pick = order[-top_k:]
        total = 0.0
        for j in pick:  # ascending, as the kernel adds them
            total = float(rnd(total + probs[r, j]))
        idx[r] = pick
        scores[r] = rnd(probs[r, pick] / total)
    return idx, scores


ROUTER_CASES = [("bfloat16", (1, 1), 128, 8), ("float16", (1, 1), 128, 8), ("bfloat16", (2, 3), 64, 4),
                ("float16", (8,), 512, 10), ("bfloat16", (1, 5), 32, 1)]
ROUTER_IDS = ["bf16_decode_128x8", "fp16_decode_128x8", "bf16_rows6_64x4", "fp16_rows8_512x10", "bf16_ne32_top1"]


def check_fused_router_topk(framework, mx, rng, dtype, lead, ne, top_k):
    m = load_kernel_path(ROUTER, framework)
    dt = getattr(mx, dtype)
    logits = normal(rng, *lead, ne, scale=2.0)
    probs = mx.softmax(mx.array(logits), axis=-1).astype(dt)  # ties in the half types happen
    idx, scores = m.fused_router_topk(probs, top_k)
    assert idx.dtype == mx.uint32 and scores.dtype == dt and idx.shape == (*lead, top_k)
    assert launched(m) == {"rapid_qwen35_moe_router_topk"}
    p = as_np(probs).reshape(-1, ne)
    want_idx, want_scores = router_reference(p, top_k, bf16 if dtype == "bfloat16" else f16)
    np.testing.assert_array_equal(np.array(idx).reshape(-1, top_k), want_idx)
    # Same roundings in the same order; numpy divides in float64 and rounds
    # once where the kernel may round its float quotient: one ulp (scores <= 1).
    eps = BF16_EPS if dtype == "bfloat16" else F16_EPS
    np.testing.assert_allclose(as_np(scores).reshape(-1, top_k), want_scores, rtol=eps, atol=0)


# --- Gated DeltaNet: float64 recurrence -----------------------------------------

def gdn_reference(q, k, v, g, beta, state, mask=None):
    """q,k [B,T,Hk,Dk]; v [B,T,Hv,Dv]; g,beta [B,T,Hv]; state [B,Hv,Dv,Dk]:
    y [B,T,Hv,Dv], the final state and the state after each step."""
    B, T, Hk, _ = q.shape
    Hv, Dv = v.shape[2:]
    state = state.astype(np.float64).copy()
    y = np.zeros((B, T, Hv, Dv))
    states = np.zeros((B, T) + state.shape[1:])
    for b in range(B):
        for h in range(Hv):
            hk = h // (Hv // Hk)
            s = state[b, h]
            for t in range(T):
                if mask is None or mask[b, t]:
                    s = s * g[b, t, h]
                    delta = (v[b, t, h] - s @ k[b, t, hk]) * beta[b, t, h]
                    s = s + np.outer(delta, k[b, t, hk])
                    y[b, t, h] = s @ q[b, t, hk]
                states[b, t, h] = s
            state[b, h] = s
    return y, state, states


GDN_PREFILL = "rapid_mlx.gdn_prefill"


def check_gdn_prefill_blocked_seq(framework, mx, rng, dtype):
    # T = 40 crosses the time block (32 for the half types, 16 for float32)
    # and ends on a partial one; Hv = 4 over Hk = 2 maps heads in pairs.
    B, T, Hk, Hv, Dk, Dv = 1, 40, 2, 4, 128, 64
    m = load_kernel_path(GDN_PREFILL, framework)
    dt = getattr(mx, dtype)
    q, k = (normal(rng, B, T, Hk, Dk, scale=Dk ** -0.5) for _ in range(2))
    v = normal(rng, B, T, Hv, Dv)
    g = rng.uniform(0.85, 1.0, (B, T, Hv)).astype(np.float32)
    beta = rng.uniform(0.0, 1.0, (B, T, Hv)).astype(np.float32)
    state = normal(rng, B, Hv, Dv, Dk, scale=0.1)
    xs = [mx.array(a).astype(dt) for a in (q, k, v)]
    y, state_out = m.gated_delta_blocked_seq(*xs, mx.array(g), mx.array(beta), mx.array(state))
    assert launched(m) == {f"rapid_gdn_blocked_seq_tb{16 if dtype == 'float32' else 32}"}
    assert y.dtype == dt and state_out.dtype == mx.float32
    # The kernel reads q/k/v exactly as stored, so the reference takes the
    # stored values; all of its arithmetic is float32.
    want_y, want_state, _ = gdn_reference(*(as_np(a) for a in xs), g.astype(np.float64), beta.astype(np.float64),
                                          state.astype(np.float64))
    # float32 arithmetic over 40 steps of 128-term dot products (|terms| < 1):
    # ~1e-6 absolute; y in bfloat16 rounds once more (u = 2^-8 relative).
    y_rtol = 2.0 ** -8 if dtype == "bfloat16" else 1e-5
    np.testing.assert_allclose(as_np(y), want_y, rtol=y_rtol, atol=2e-5)
    np.testing.assert_allclose(as_np(state_out), want_state, rtol=1e-5, atol=2e-5)


GDN_VERIFY = "rapid_mlx.kernels.qwen4_gdn_verify"

GDN_VERIFY_CASES = [("float32", True), ("bfloat16", False), ("bfloat16", True)]
GDN_VERIFY_IDS = ["f32_mask", "bf16_nomask", "bf16_mask"]


def check_qwen4_gdn_verify_with_states(framework, mx, rng, dtype, masked):
    B, T, Hk, Hv, Dk, Dv = 2, 5, 1, 2, 64, 32
    q, k = (normal(rng, B, T, Hk, Dk, scale=Dk ** -0.5) for _ in range(2))
    v = normal(rng, B, T, Hv, Dv)
    alpha, beta = normal(rng, B, T, Hv), normal(rng, B, T, Hv)
    a_log, dt_bias = normal(rng, Hv, scale=0.5), normal(rng, Hv)
    state = normal(rng, B, Hv, Dv, Dk, scale=0.1)
    mask = rng.uniform(size=(B, T)) > 0.3 if masked else None

    def call(m, xs):
        mx = m.mx
        dt = getattr(mx, dtype)
        qq, kk, vv, al, be, alog, dtb, st = xs[:8]
        out = m.gated_delta_verify_with_states(qq.astype(dt), kk.astype(dt), vv.astype(dt), al, be, alog, dtb,
                                               st, xs[8] if masked else None)
        return [o.astype(mx.float32) for o in out]

    inputs = [q, k, v, alpha, beta, a_log, dt_bias, state] + ([mask] if masked else [])
    res = run_paths(framework, GDN_VERIFY, call, inputs)
    assert res["kernels launched"] == {"rapid_qwen4_gdn_verify" + ("_mask" if masked else "")}
    # y in bfloat16 is rounded from float32 sums: an ulp (2^-7 relative) apart
    # when the two paths' float32 sums straddle a rounding boundary.
    rtol = BF16_EPS if dtype == "bfloat16" else 2e-5
    assert_agree(res, ["y", "state", "rollback_states"], rtol=rtol, atol=2e-5, fallbacks=ops_runs(res))
    # And the recurrence in float64 (g and beta from the file's own formula).
    rnd = bf16 if dtype == "bfloat16" else (lambda a: np.asarray(a, np.float32).astype(np.float64))
    softplus = np.logaddexp(0, alpha.astype(np.float64) + dt_bias)
    g = np.exp(-np.exp(a_log.astype(np.float64)) * softplus)
    want_y, want_state, states = gdn_reference(rnd(q), rnd(k), rnd(v), g, sigmoid64(beta), state, mask)
    got_y, got_state, got_states = res["kernel"]
    np.testing.assert_allclose(got_y, want_y, rtol=rtol, atol=2e-5)
    np.testing.assert_allclose(got_state, want_state, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(got_states, states[:, :-1], rtol=2e-5, atol=2e-5)


# --- spec_decode/mtp/quantized_argmax.py ---------------------------------------

QARGMAX = "rapid_mlx.spec_decode.mtp.quantized_argmax"

# Each (bits, dtype, T) compiles its own kernel, so a few combinations cover
# both widths, both dtypes and the three shapes. T == 1 with 1 < B <= 4: the
# file runs the batch as one sequence of B verify steps.
QARGMAX_CASES = [(4, "bfloat16", 2, 3), (5, "float16", 3, 1), (5, "bfloat16", 1, 1)]
QARGMAX_IDS = ["b4_bf16_verify_2x3", "b5_fp16_batch3_transposed", "b5_bf16_decode"]


def check_quantized_argmax(framework, mx, rng, bits, dtype, B, T):
    K, N, gs = 1024, 96, 64
    m = load_kernel_path(QARGMAX, framework)
    nn = m.nn
    dt = getattr(mx, dtype)
    lin = nn.Linear(K, N, bias=False)
    lin.weight = mx.array(normal(rng, N, K, scale=K ** -0.5))
    ql = nn.QuantizedLinear.from_linear(lin, group_size=gs, bits=bits)
    ql.scales, ql.biases = ql.scales.astype(dt), ql.biases.astype(dt)
    x = mx.array(normal(rng, B, T, K, scale=4.0)).astype(dt)
    got = m.quantized_argmax(ql, x)
    assert got is not None and got.shape == (B, T)
    assert launched(m) == {f"qwen3_5_target_verify_qargmax_b{bits}_gs{gs}_t{B if (T == 1 and B > 1) else T}_k{K}_n{N}_"
                           + ("bf16" if dtype == "bfloat16" else "fp16")}
    # The weights the kernel reads, dequantised in float32 (exact: code *
    # scale + bias of half-type values), the logits in float64.
    w = as_np(mx.dequantize(ql.weight, ql.scales.astype(mx.float32), ql.biases.astype(mx.float32),
                            group_size=gs, bits=bits))
    logits = as_np(x) @ w.T
    got = np.array(got).astype(np.int64)
    assert got.min() >= 0 and got.max() < N
    # The kernel compares each float32 logit rounded to T, so it may pick any
    # logit that rounds to the top value: one ulp of T below the maximum at most.
    best = logits.max(axis=-1)
    ulp = np.exp2(np.floor(np.log2(np.abs(best)))) * (BF16_EPS if dtype == "bfloat16" else F16_EPS)
    chosen = np.take_along_axis(logits, got[..., None], axis=-1)[..., 0]
    assert np.all(chosen >= best - ulp - 1e-4 * np.abs(best)), (got, logits.argmax(-1), chosen, best)


# --- patches/moe_decode_fusion.py: route and combine ---------------------------

MOE = "rapid_mlx.patches.moe_decode_fusion"

MOE_CASES = [(64, 256, 4, False), (192, 3072, 8, True)]
MOE_IDS = ["E64_one_simdgroup_nobias", "E192_bn8_expert_bias"]


def check_moe_decode_route_and_combine(framework, mx, rng, E, H, K, biased):
    m = load_kernel_path(MOE, framework)
    nn = importlib.import_module(FRAMEWORKS[framework].prefix + ".nn")
    W = normal(rng, E, H, scale=H ** -0.5)
    gate = nn.Linear(H, E, bias=False)
    gate.weight = mx.array(W)
    bias = normal(rng, E, scale=0.02)
    block = types.SimpleNamespace(num_experts=E, top_k=K, gate=gate, use_expert_bias=biased,
                                  expert_bias=mx.array(bias), norm_topk_prob=True)
    x = normal(rng, 1, 1, H, scale=3.0)
    idx, scores = m.route(block, mx.array(x))
    assert idx.shape == (1, 1, K) and scores.dtype == mx.float32
    logits = W.astype(np.float64) @ x.reshape(H)
    p = np.exp(logits - logits.max())
    p /= p.sum()
    if biased:
        p = p + bias
    # Written from the least to the most probable of the top K; the random
    # float probabilities have no ties.
    want = np.argsort(p, kind="stable")[-K:]
    np.testing.assert_array_equal(np.array(idx).reshape(K), want)
    # float32 GEMV, fast exp and sums: a few float32 ulps relative.
    np.testing.assert_allclose(as_np(scores).reshape(K), p[want] / p[want].sum(), rtol=2e-5, atol=0)

    y = normal(rng, 1, 1, K, H).astype(np.float32)
    y_b = mx.array(y).astype(mx.bfloat16)
    s_b = scores.astype(mx.bfloat16)
    out = m.combine(y_b, s_b)
    assert out.shape == (1, 1, H) and out.dtype == mx.bfloat16
    assert launched(m) == {"rapid_moe_decode_logits", "rapid_moe_decode_route", "rapid_moe_decode_combine"}
    # The kernel's bfloat16 arithmetic: each product rounded, each add rounded.
    yv, sv = as_np(y_b).reshape(K, H), as_np(s_b).reshape(K)
    acc = np.zeros(H)
    for j in range(K):
        acc = bf16(acc + bf16(yv[j] * sv[j]))
    np.testing.assert_array_equal(as_np(out).reshape(H), acc)


# --- models/deepseek_v41_native/rope_quant.py ------------------------------------

ROPE_QUANT = "rapid_mlx.models.deepseek_v41_native.rope_quant"

ROPE_QUANT_CASES = [("fp8_ue8m0", "bfloat16", "bfloat16"), ("fp4_ue8m0", "float16", "float32"),
                    ("fp4_e4m3", "float32", "bfloat16")]


def check_deepseek_v41_rope_fake_quant(framework, mx, rng, fmt, dtype, out_dtype):
    b, s, h, d, rd = 2, 3, 2, 64, 16
    # Blocks of very different scales, so each block picks its own exponent.
    x = normal(rng, b, s, h, d) * np.exp2(rng.integers(-6, 7, (b, s, h, d // 16, 1))).repeat(16, -1).reshape(b, s, h, d)
    angles = rng.uniform(0, 2 * np.pi, (s, rd // 2))
    cos, sin = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
    verdicts = []

    def call(m, xs):
        mx = m.mx
        xx, c, sn = xs
        out = m.rope_fake_quant(xx.astype(getattr(mx, dtype)), rd, c, sn, fmt, getattr(mx, out_dtype))
        verdicts.append(dict(m._CHECK.verdicts))
        return [out.astype(mx.float32)]

    res = run_paths(framework, ROPE_QUANT, call, [x.astype(np.float32), cos, sin])
    assert res["kernels launched"] == {"rapid_v41_rope_fake_quant"}
    # The kernel path's self-check (kernel against the graph, bytes) passed,
    # so the kernel's own output is what came back; the ops runs never ask.
    assert list(verdicts[0].values()) == [True] and verdicts[1:] == [{}] * len(ops_runs(res))
    # Every rounding point is the graph's: bit for bit against the graphs.
    assert_agree(res, ["out"], rtol=0, atol=0, fallbacks=ops_runs(res))


# --- kernels/qwen4_fused_gdn_decode.py ------------------------------------------

FUSED_GDN = "rapid_mlx.kernels.qwen4_fused_gdn_decode"


def sigmoid_in_bf16(x):
    """The header's mlx_sigmoid_{precise,fast}<bfloat>: exp(|x|), 1 + e,
    1 / (1 + e) and 1 - y each stored in bfloat16."""
    y = bf16(1 / bf16(1 + bf16(np.exp(np.abs(x)))))
    return np.where(x < 0, y, bf16(1 - y))


def lane_sum_of_squares(a):
    """The kernel's sum of squares for the Qwen4 q/k norms: squares stored in
    bfloat16, four per lane added in bfloat16, the lanes' sums by simd_sum in
    float32, the total stored in bfloat16."""
    squares = bf16(a * a).reshape(32, -1)
    part = np.zeros(32)
    for i in range(squares.shape[1]):
        part = bf16(squares[:, i] + part)
    return bf16(part.sum())


def fused_gdn_decode_reference(qkv, z, beta, alpha, conv_state, conv_weight, a_log, dt_bias, state, norm_weight,
                               eps, hk_n, hv_n, dk, dv, kc):
    """Qwen4's fused decode step (qwen35_semantics=False) in float64 with the
    kernel's bfloat16 roundings (bf16) where it stores into T."""
    kd, vd = hk_n * dk, hv_n * dv
    qkv, z = qkv.reshape(-1), z.reshape(-1)
    taps = np.concatenate([conv_state.reshape(kc - 1, -1), qkv[None]], axis=0)  # [K, C]
    w = conv_weight.reshape(-1, kc)  # [C, K]
    # The conv sum in float32 in the kernel's order (products of two bfloat16
    # values are exact in float32), so xb rounds as the kernel's does.
    acc = np.zeros(taps.shape[1], np.float32)
    for tap in range(kc):
        acc = acc + (taps[tap] * w[:, tap]).astype(np.float32)
    xb = bf16(acc)
    act = bf16(xb * sigmoid_in_bf16(xb))
    q_all, k_all, v_all = act[:kd].reshape(hk_n, dk), act[kd:2 * kd].reshape(hk_n, dk), act[2 * kd:].reshape(hv_n, dv)
    # mlx_softplus_fast in T: max + log1p(exp(min - max)), each stored in T.
    av = bf16(alpha.reshape(-1) + dt_bias)
    hi, lo = np.maximum(av, 0), np.minimum(av, 0)
    sp = bf16(hi + bf16(np.log1p(bf16(np.exp(lo - hi)))))
    g = np.exp(-np.exp(a_log) * sp)
    b = sigmoid_in_bf16(beta.reshape(-1))
    out = np.zeros(vd)
    new_state = np.zeros_like(state, dtype=np.float64).reshape(hv_n, dv, dk)
    state = state.reshape(hv_n, dv, dk)
    for h in range(hv_n):
        hk = h // (hv_n // hk_n)
        qv, kv = q_all[hk], k_all[hk]
        qn, kn = (bf16(1 / np.sqrt(bf16(lane_sum_of_squares(a) + bf16(1e-6)))) for a in (qv, kv))
        qq = bf16(bf16(qv * qn) * bf16(0.08838834764831845))
        kk = bf16(kv * kn)
        s = state[h] * g[h]
        delta = (v_all[h] - s @ kk) * b[h]
        s = s + np.outer(delta, kk)
        new_state[h] = s
        y = bf16(s @ qq)
        r = 1 / np.sqrt((y * y).mean() + eps)
        normed = bf16(norm_weight * bf16(y * r))
        out[h * dv:(h + 1) * dv] = bf16(normed * sigmoid64(z[h * dv:(h + 1) * dv]))
    conv_out = np.concatenate([conv_state.reshape(kc - 1, -1)[1:], qkv[None]], axis=0)
    return out, conv_out, new_state


def check_qwen4_fused_gdn_decode(framework, mx, rng, threadgroup_y):
    # Qwen4's head dims (128, which the kernel's 4-per-lane norms assume) and
    # conv width, two value heads over one key head instead of 48 over 16.
    HK, HV, DK, DV, KC = 1, 2, 128, 128, 4
    C = 2 * HK * DK + HV * DV
    m = load_kernel_path(FUSED_GDN, framework)
    bf = mx.bfloat16
    arrays = dict(
        qkv=normal(rng, 1, 1, C), z=normal(rng, 1, 1, HV * DV), beta=normal(rng, 1, 1, HV),
        alpha=normal(rng, 1, 1, HV), conv_state=normal(rng, 1, KC - 1, C), conv_weight=normal(rng, C, KC, 1, scale=0.5),
        dt_bias=normal(rng, HV), norm_weight=1 + 0.1 * normal(rng, DV))
    stored = {k: mx.array(v).astype(bf) for k, v in arrays.items()}
    a_log = normal(rng, HV, scale=0.5)
    state = normal(rng, 1, HV, DV, DK, scale=0.1)
    eps = 1e-6
    out, conv_out, state_out = m.fused_gdn_decode(
        stored["qkv"], stored["z"], stored["beta"], stored["alpha"], stored["conv_state"], stored["conv_weight"],
        mx.array(a_log), stored["dt_bias"], mx.array(state), stored["norm_weight"], eps,
        threadgroup_y=threadgroup_y, num_key_heads=HK, num_value_heads=HV, key_head_dim=DK, value_head_dim=DV,
        conv_kernel=KC)
    assert launched(m) == {"rapid_qwen4_fused_gdn_decode"}
    v = {k: as_np(a) for k, a in stored.items()}
    want_out, want_conv, want_state = fused_gdn_decode_reference(
        v["qkv"], v["z"], v["beta"], v["alpha"], v["conv_state"], v["conv_weight"], a_log.astype(np.float64),
        v["dt_bias"], state.astype(np.float64), v["norm_weight"], eps, HK, HV, DK, DV, KC)
    # The shifted conv state is a copy: exact.
    np.testing.assert_array_equal(as_np(conv_out).reshape(KC - 1, C), want_conv)
    # The reference rounds to bfloat16 where the kernel does, from the same
    # values, so only float32-vs-float64 sums differ: the state by float32
    # rounding; a stored y (sum over lanes) may land one ulp away when it sits
    # on a rounding boundary, which moves its output by an ulp or two (2^-7
    # relative each).
    np.testing.assert_allclose(as_np(state_out).reshape(HV, DV, DK), want_state, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(as_np(out).reshape(-1), want_out, rtol=2 * BF16_EPS, atol=1e-6)
