"""mlx-vlm's image kernels (mlx_vlm/models/kernels.py: nearest and bicubic
interpolation, grid_sample, separable interpolation from tap tables), loaded
unchanged from the installed package with their imports pointed at Alloy
(real_mlx_code.py) and run three ways on the same fresh random inputs: Alloy
with the file's Metal kernels, Alloy with its pure-MLX fallback (what it takes
without Metal), and real MLX (CPU, no Metal: the fallback)."""
import types

import numpy as np
import pytest

from real_mlx_code import MLX_VLM_DIFFUSION_STAND_INS, assert_agree, load, normal, run_three

import alloy.core as ax

KERNELS = "mlx_vlm.models.kernels"


@pytest.mark.parametrize("size", [(13, 21), (4, 3)])
def test_nearest_interpolate(rng, size):
    x = normal(rng, 2, 3, 7, 9)

    def call(m, xs):
        return [m.nearest_interpolate(xs[0], size=size)]

    assert_agree(run_three(KERNELS, call, [x]), ["out"], rtol=0, atol=0)


@pytest.mark.parametrize("size,align_corners,antialias", [
    ((15, 11), False, False),  # upscale
    ((15, 11), True, False),
    ((5, 4), False, True),  # downscale with the antialiasing filter
])
def test_bicubic_interpolate(rng, size, align_corners, antialias):
    x = normal(rng, 1, 2, 9, 8)

    def call(m, xs):
        return [m.bicubic_interpolate(xs[0], size=size, align_corners=align_corners, antialias=antialias)]

    assert_agree(run_three(KERNELS, call, [x]), ["out"], rtol=1e-4, atol=1e-5)


def test_grid_sample(rng, monkeypatch):
    """The kernel reads all four corners, then zeroes those outside the image
    (as the seed's grid_sample): run unchecked, as written."""
    monkeypatch.setenv("ALLOY_BOUNDS_CHECK", "0")
    x = normal(rng, 2, 10, 12, 5)  # channel-last, as the fallback reads it
    grid = rng.uniform(-1.1, 1.1, (2, 6, 7, 2)).astype(np.float32)  # some samples outside

    def call(m, xs):
        return [m.grid_sample(*xs)]

    assert_agree(run_three(KERNELS, call, [x, grid]), ["out"])


def test_grid_sample_bounds_checked_names_the_read_outside(rng):
    """Under bounds_check (the suite's default) the same call stops at the
    first read outside x, quoting the kernel's own line."""
    m = load(KERNELS, "alloy", kernels=True)
    x = ax.array(normal(rng, 1, 4, 4, 3))
    grid = ax.array(np.full((1, 1, 1, 2), -1.0, np.float32))  # the corner: its north-west neighbour is outside
    with pytest.raises(RuntimeError, match=r"(?s)kernel 'grid_sample': out-of-bounds read of input 'x'.*"
                                           r"T I_nw = x\[base_idx \+ iy_nw \* h_stride \+ ix_nw \* w_stride\];"):
        ax.eval(m.grid_sample(x, grid))


def test_separable_interpolate(rng):
    H, W, out_h, out_w, taps = 9, 11, 6, 8, 4
    x = normal(rng, 2, H, W, 3)
    iy = rng.integers(0, H, (out_h, taps)).astype(np.int32)
    ix = rng.integers(0, W, (out_w, taps)).astype(np.int32)
    wy = rng.random((out_h, taps)).astype(np.float32)
    wx = rng.random((out_w, taps)).astype(np.float32)

    def call(m, xs):
        return [m.separable_interpolate(*xs)]

    assert_agree(run_three(KERNELS, call, [x, iy, wy, ix, wx]), ["out"])


# --- mlx_vlm/models/rope_utils.py: fused multimodal RoPE kernels -------------

ROPE = "mlx_vlm.models.rope_utils"


MROPE_CASES = [(style, 3) for style in ("interleaved", "chunked", "sectioned_half_split", "sectioned_even_odd",
                                        "split_select")]
# Text-only positions (one row per token, no axis of 3): the styles whose
# fallback takes them (the sectioned ones pick one of three axes per section).
MROPE_CASES += [("interleaved", 2), ("chunked", 2), ("split_select", 2)]


@pytest.mark.parametrize("style,position_ndim", MROPE_CASES)
def test_mrope_apply_rotary(rng, style, position_ndim):
    """MRoPERotaryEmbedding.apply_rotary (Qwen-VL, GLM-4V, PaddleOCR, ERNIE
    styles): its compiled kernel over q and k against the file's cos/sin path."""
    B, Hq, Hk, T, D = 2, 4, 2, 7, 32
    q, k = normal(rng, B, Hq, T, D), normal(rng, B, Hk, T, D)
    shape = (3, B, T) if position_ndim == 3 else (B, T)
    positions = rng.integers(0, 50, shape).astype(np.int32)

    def call(m, xs):
        rope = m.MRoPERotaryEmbedding(D, base=10000.0, mrope_section=[4, 6, 6], style=style)
        return list(rope.apply_rotary(*xs))

    assert_agree(run_three(ROPE, call, [q, k, positions]), ["q", "k"], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("cos_layout", ["half", "full"])
def test_rotary_pos_emb_even_odd(rng, cos_layout):
    """apply_rotary_pos_emb_even_odd from precomputed cos/sin: the kernel path
    against the file's repeat-and-rotate path."""
    B, Hq, Hk, T, D = 2, 3, 1, 5, 16
    q, k = normal(rng, B, Hq, T, D), normal(rng, B, Hk, T, D)
    angle = rng.uniform(0, 6, (B, T, D)).astype(np.float32)
    cos, sin = np.cos(angle), np.sin(angle)

    def call(m, xs):
        layout = m._HALF_COS if cos_layout == "half" else m._FULL_COS
        return list(m.apply_rotary_pos_emb_even_odd(*xs, cos_layout=layout))

    assert_agree(run_three(ROPE, call, [q, k, cos, sin]), ["q", "k"], rtol=1e-5, atol=1e-5)


# --- mlx_vlm/turboquant.py: TurboQuant KV cache ------------------------------


def attention64(q, k, v, scale):
    """float64 softmax(q k^T scale) v, kv heads shared by consecutive q heads."""
    rep = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, rep, axis=1).astype(np.float64), np.repeat(v, rep, axis=1).astype(np.float64)
    s = np.einsum("bhld,bhsd->bhls", q.astype(np.float64), k) * scale
    p = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("bhls,bhsd->bhld", p / p.sum(-1, keepdims=True), v)


@pytest.mark.parametrize("bits,D,B", [(4.0, 128, 1), (3.5, 64, 1), (2.0, 256, 2)])
def test_turboquant_kv_cache(rng, bits, D, B):
    """TurboQuantKVCache as a model's attention uses it: a prompt quantized and
    attended by three queries, then two decode steps (each new token
    quantized by the fused kernel, attention by the fused quantized-SDPA
    kernel), on the kernel path and on the file's ops paths.

    Each run's attention equals float64 attention over that run's own
    dequantized keys and values. Across runs the dequantized caches agree
    except where a value sits within float rounding of a boundary (the
    kernel's norms sum in another order): a vector's float16 norm may take
    the neighbouring value, and at most one vector in ten (at least one) a
    neighbouring code, its direction and its length moving by at most 0.05.
    The codebooks come from numpy with fixed seeds, so all runs quantize
    alike."""
    Hq, Hk = 4, 2
    scale = D**-0.5
    xs = [normal(rng, B, Hk, 6, D), normal(rng, B, Hk, 6, D), normal(rng, B, Hq, 3, D)]
    xs += [a for _ in range(2) for a in (normal(rng, B, Hk, 1, D), normal(rng, B, Hk, 1, D), normal(rng, B, Hq, 1, D))]

    def call(m, xs):
        cache = m.TurboQuantKVCache(bits=bits)
        keys, values = cache.update_and_fetch(xs[0], xs[1])
        outs = [cache.quantized_attention(xs[2], keys, values, scale=scale), *cache.dequantize()]
        for i in range(2):
            k, v, q = xs[3 + 3 * i : 6 + 3 * i]
            keys, values = cache.update_and_fetch(k, v)
            outs += [cache.decode_attention(q, keys, values, scale=scale), *cache.dequantize()]
        return outs

    results = run_three("mlx_vlm.turboquant", call, xs)
    queries = [xs[2], xs[5], xs[8]]
    for run in ("kernel", "alloy_ops", "mlx_ops"):
        for step, q in enumerate(queries):
            out, keys, values = results[run][3 * step : 3 * step + 3]
            np.testing.assert_allclose(out, attention64(q, keys, values, scale), rtol=1e-4, atol=1e-5,
                                       err_msg=f"{run}: attention {step} against its own dequantized cache")
    for fallback in ("alloy_ops", "mlx_ops"):
        for i in (1, 2, 4, 5, 7, 8):
            got, want = results["kernel"][i], results[fallback][i]
            # Each vector is its float16 norm times a direction from the
            # codebook: norms may round to neighbouring float16 values
            # (2^-10 apart), directions may differ in a code at a boundary.
            norm_got, norm_want = np.linalg.norm(got, axis=-1), np.linalg.norm(want, axis=-1)
            # A code at a boundary may be one of the rotated vector's, which
            # moves every element of the direction (seed 3309507206: one
            # vector of 12 against MLX's ops, each element by 0.002, the
            # direction by 0.023): vectors are counted, and each moves by at
            # most 0.05.
            dir_got, dir_want = got / norm_got[..., None], want / norm_want[..., None]
            moved = ~np.isclose(dir_got, dir_want, rtol=1e-5, atol=1e-6).all(axis=-1)
            assert moved.sum() <= max(1, moved.size // 10), \
                f"cache {i}: {moved.sum()} of {moved.size} vectors differ from {fallback}"
            # Vectors with the same codes differ in their norms' rounding
            # only; a changed code changes the length with the direction
            # (a norm 0.39% off in one CI run), by at most as much.
            np.testing.assert_allclose(norm_got[~moved], norm_want[~moved], rtol=2e-3,
                                       err_msg=f"cache {i}: norms vs {fallback}")
            assert (np.abs(norm_got - norm_want) / norm_want)[moved].max(initial=0) <= 0.05, \
                f"cache {i}: a changed code moved a norm by more than 5% from {fallback}"
            distance = np.linalg.norm(dir_got - dir_want, axis=-1)
            assert distance.max() <= 0.05, f"cache {i}: a direction moved by {distance.max()} from {fallback}"
    launched = results["kernels launched"]
    assert any(n.startswith("turboquant_fused_mse_sdpa_") for n in launched), launched
    assert any(n.startswith("turboquant_norot_quantize_") for n in launched), launched


# --- mlx_vlm/models/deepseek_v41/fakequant.py: FP8 round trip ----------------


@pytest.mark.parametrize("scale", [1.0, 1e-3, 300.0])
def test_deepseek_v41_fp8_roundtrip(rng, scale):
    """fake_quant_fp8_ue8m0: each 32-element block through FP8 e4m3 with a
    power-of-two scale, one SIMD group a block (simd_max, as_type, rint) in the
    kernel against mx.to_fp8 / mx.from_fp8 in the fallback: bit for bit."""
    x = normal(rng, 3, 5, 64, scale=scale)
    x[0, 0, :32] = 0.0  # an all-zero block: amax floored at 1e-4

    def call(m, xs):
        return [m.fake_quant_fp8_ue8m0(xs[0])]

    results = run_three("mlx_vlm.models.deepseek_v41.fakequant", call, [x])
    assert_agree(results, ["x"], rtol=0, atol=0)
    assert results["kernels launched"] == {"deepseek_v41_fp8_roundtrip"}


# --- mlx_vlm/quantization/one_bit.py: 1-bit affine matmuls ------------------


@pytest.mark.parametrize("rows,in_dims,out_dims,group_size", [
    (3, 256, 40, 64),  # matrix-vector kernel (simd_sum), rows not a multiple of a threadgroup's 8
    (1, 128, 64, 32),  # matrix-vector, aligned
    (20, 512, 72, 128),  # matrix-matrix kernel (simdgroup_matrix 8x8 MMA), partial tiles
])
def test_one_bit_quantized_matmul(rng, rows, in_dims, out_dims, group_size):
    """one_bit_quantized_matmul's kernels against the file's fallback
    (dequantize_one_bit, then a matmul)."""
    x = normal(rng, rows, in_dims)
    weight = rng.integers(0, 2**32, (out_dims, in_dims // 32), dtype=np.uint64).astype(np.uint32)
    scales = normal(rng, out_dims, in_dims // group_size, scale=0.1)
    biases = normal(rng, out_dims, in_dims // group_size, scale=0.1)

    def call(m, xs):
        return [m.one_bit_quantized_matmul(*xs, group_size=group_size)]

    results = run_three("mlx_vlm.quantization.one_bit", call, [x, weight, scales, biases])
    assert_agree(results, ["out"], rtol=1e-4, atol=1e-4)


# --- mlx_vlm/models/exact_speculative_verify.py: small-block GEMVs ------------


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_exact_speculative_verify(rng, dtype):
    """The dense and per-expert GEMV kernels that verify a few speculative
    tokens (no fallback in the file: it returns None without Metal), against
    float64 numpy on the same rounded inputs; the result is rounded once."""
    import ml_dtypes

    np_type = np.float16 if dtype == "float16" else ml_dtypes.bfloat16
    m = load("mlx_vlm.models.exact_speculative_verify", "alloy", kernels=True)
    B, L, K, O, E = 2, 3, 96, 40, 5
    x = normal(rng, B, L, K).astype(np_type)
    w = normal(rng, O, K, scale=K**-0.5).astype(np_type)
    experts_w = normal(rng, E, O, K, scale=K**-0.5).astype(np_type)
    picks = rng.integers(0, E, (B, L, 2)).astype(np.uint32)
    t = getattr(ax, dtype)
    dense = m.exact_speculative_verify_weight(ax.array(w.astype(np.float32)).astype(t),
                                              ax.array(x.astype(np.float32)).astype(t))
    switch = m.exact_speculative_verify_switch_weight(ax.array(experts_w.astype(np.float32)).astype(t),
                                                      ax.array(x.astype(np.float32)).astype(t), ax.array(picks))
    x64, w64, e64 = (a.astype(np.float64) for a in (x, w, experts_w))
    want_dense = x64 @ w64.T
    want_switch = np.einsum("blk,blsok->blso", x64, e64[picks])
    tol = 1e-2 if dtype == "bfloat16" else 2e-3
    for got, want in ((dense, want_dense), (switch, want_switch)):
        assert got is not None and got.dtype == t
        np.testing.assert_allclose(np.array(got.astype(ax.float32)), want, rtol=tol, atol=tol)


# --- mlx_vlm/models/longcat_flash_sparse/indexer_kernel.py -------------------


def test_longcat_indexer_dense_scores(rng):
    """The sparse-attention indexer's epilogue kernel (per-head ReLU, weighted
    sum over heads, scale; a threadgroup table of the weights behind a
    barrier) after the file's own matmul, against float64 numpy; 300 keys: a
    partial tile of 256."""
    m = load("mlx_vlm.models.longcat_flash_sparse.indexer_kernel", "alloy", kernels=True)
    B, H, L, hd, Np = 2, 5, 3, 16, 300
    q, pooled, weights = normal(rng, B, H, L, hd), normal(rng, B, Np, hd), normal(rng, B, L, H)
    scale = 0.37
    got = np.array(m.indexer_dense_scores(ax.array(q), ax.array(pooled), ax.array(weights), scale))
    g = np.einsum("bhld,bsd->bhls", q.astype(np.float64), pooled)
    want = scale * np.einsum("bhls,blh->bls", np.maximum(g, 0), weights)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# --- mlx_vlm/models/inkling/language.py: banded relative-position mask --------


@pytest.mark.parametrize("variant", ["fixed_shapes", "shape_carrier"])
@pytest.mark.parametrize("sliding", [0, 6])
def test_inkling_banded_additive_mask(rng, variant, sliding):
    """banded_additive_mask: causal, sliding-window and relative-position band
    in one kernel, against the file's ops path. The first kernel takes every
    size as a template constant; the second reads them from its inputs'
    shapes, S from an input it never reads (a shape carrier), and takes `rel`
    with its strides (here a transposed view)."""
    B, LQ, H, d_rel, S, extent = 2, 5, 3, 4, 11, 7
    rel = normal(rng, B, H, LQ, d_rel)  # seen as (B, LQ, H, d_rel) below: not row-contiguous
    proj = normal(rng, d_rel, extent)
    carrier = np.zeros((B, H, S, 2), np.float32)

    def call(m, xs):
        r = xs[0].transpose(0, 2, 1, 3)
        ref = xs[2] if variant == "shape_carrier" else None
        return [m.banded_additive_mask(r, xs[1], S - LQ, S, sliding, extent, shape_ref=ref)]

    results = run_three("mlx_vlm.models.inkling.language", call, [rel, proj, carrier])
    assert_agree(results, ["mask"], rtol=1e-5, atol=1e-5)
    want = "inkling_banded_mask_v2" if variant == "shape_carrier" else "inkling_banded_mask"
    assert results["kernels launched"] == {want}


# --- mlx_vlm/models/nemotron_h/speculative_verifier.py: Mamba-2 verify ------


def test_nemotron_h_mamba_verify_and_replay(rng):
    """_mamba_update_exact over a block of 4 draft tokens (one kernel for all
    of them) against the file's token-by-token ssm_update loop; then
    replay_mamba_state's kernel rebuilds the state after the first 2 tokens,
    against the loop's state at that token."""
    b, T, h, d, g, ds = 2, 4, 4, 16, 2, 32
    xs = [
        normal(rng, b, T, h, d),  # hidden_states
        normal(rng, h, scale=0.5),  # A_log
        normal(rng, b, T, g, ds),  # B
        normal(rng, b, T, g, ds),  # C
        normal(rng, h),  # D
        normal(rng, b, T, h),  # dt
        normal(rng, h, scale=0.5),  # dt_bias
        normal(rng, b, h, d, ds),  # state
    ]

    def call(m, xs):
        out, state, rollback = m._mamba_update_exact(*xs, (0.0, float("inf")), None)
        kept = m.replay_mamba_state(rollback, 2) if isinstance(rollback, dict) else rollback[:, 1]
        return [out, state, kept]

    results = run_three("mlx_vlm.models.nemotron_h.speculative_verifier", call, xs)
    assert_agree(results, ["y", "state", "state after 2 tokens"], rtol=2e-4, atol=2e-5)
    launched = results["kernels launched"]
    for kind in ("verify", "replay"):
        assert any(n.startswith(f"nemotron_h_target_{kind}_mamba_") for n in launched), launched


# --- mlx_vlm/models/nemotron_labs_diffusion/language.py: small-row GEMVs -----

NEMOTRON_DIFFUSION = "mlx_vlm.models.nemotron_labs_diffusion.language"


@pytest.mark.parametrize("dtype,K", [("float16", 100), ("bfloat16", 64), ("float32", 136)])
def test_nemotron_diffusion_small_row_linear_and_swiglu(rng, dtype, K):
    """The diffusion LM's GEMVs for a few rows (simd_shuffle_down reductions,
    a leftover path when K is not a multiple of 128): a linear layer with
    bias, and gate/up projections fused with SiLU. The file has no fallback
    inside them (they return None without Metal, and the caller takes its
    ops): against float64 numpy on the same rounded inputs. (Its other
    linear, on MLX's steel GEMM header: the next test.)"""
    m = load(NEMOTRON_DIFFUSION, "alloy", kernels=True, substitutes=MLX_VLM_DIFFUSION_STAND_INS)
    t = getattr(ax, dtype)
    rows, O = 5, 48

    def make(shape, scale=1.0):
        a = ax.array(normal(rng, *shape, scale=scale)).astype(t)
        return a, np.array(a.astype(ax.float32)).astype(np.float64)

    x, x64 = make((1, rows, K))
    linear, gate, up = (m.nn.Linear(K, O, bias=b) for b in (True, False, False))
    linear.weight, w64 = make((O, K), K**-0.5)
    linear.bias, b64 = make((O,))
    gate.weight, g64 = make((O, K), K**-0.5)
    up.weight, u64 = make((O, K), K**-0.5)
    out = m._small_row_linear(linear, x, 8)
    fused = m._small_row_swiglu(gate, up, x, 8)
    assert out is not None and fused is not None and out.dtype == t and fused.dtype == t
    rounded = (lambda v: np.array(ax.array(v.astype(np.float32)).astype(t).astype(ax.float32))) if dtype != "float32" \
        else (lambda v: v)
    g, u = rounded(x64 @ g64.T), rounded(x64 @ u64.T)  # the kernel rounds each projection to T
    tol = {"float32": 1e-5, "float16": 3e-3, "bfloat16": 2e-2}[dtype]
    np.testing.assert_allclose(np.array(out.astype(ax.float32)), x64 @ w64.T + b64, rtol=tol, atol=tol)
    np.testing.assert_allclose(np.array(fused.astype(ax.float32)), g / (1 + np.exp(-g)) * u, rtol=tol, atol=tol)



def test_nemotron_diffusion_bm32_linear_on_mlx_steel_gemm(rng):
    """The diffusion LM's 32-row linear: the file reads MLX's steel GEMM
    header (GEMMKernel, its loaders and simdgroup MMA) from
    Path(mx.__file__).parent / "include" at import and builds its kernel on
    it; on Alloy that path is the alloy package's include link to the
    installed mlx's headers (without it the file finds no header and the
    kernel is None). bfloat16 against float64 numpy on the same inputs."""
    m = load(NEMOTRON_DIFFUSION, "alloy", kernels=True, substitutes=MLX_VLM_DIFFUSION_STAND_INS)
    assert m._BM32_LINEAR_KERNEL is not None, "the file found no MLX steel GEMM header under mx.__file__"
    K, O, rows = 96, 192, 32
    lin = m.nn.Linear(K, O)
    lin.weight = ax.array(normal(rng, O, K, scale=K**-0.5)).astype(ax.bfloat16)
    lin.bias = ax.array(normal(rng, O)).astype(ax.bfloat16)
    x = ax.array(normal(rng, 1, rows, K)).astype(ax.bfloat16)
    as64 = lambda a: np.array(a.astype(ax.float32)).astype(np.float64)  # noqa: E731
    out = m._bm32_linear(lin, x)
    assert out is not None and out.dtype == ax.bfloat16 and out.shape == (1, rows, O)
    want = as64(x) @ as64(lin.weight).T + as64(lin.bias)
    # bfloat16 output (8 bits of mantissa), the bias added in bfloat16.
    np.testing.assert_allclose(as64(out), want, rtol=2e-2, atol=2e-2)

# --- mlx_vlm/models/deepseek_v4/hyper_connection.py: hyper-connections ------

HYPER = "mlx_vlm.models.deepseek_v4.hyper_connection"


def hyper_connection(m, xs, D, fn_dtype=None):
    """The file's HyperConnection (4 streams) with the test's weights."""
    config = types.SimpleNamespace(hc_mult=4, hc_sinkhorn_iters=3, hc_eps=1e-6, rms_norm_eps=1e-6, hidden_size=D)
    hc = m.HyperConnection(config)
    hc.fn, hc.base, hc.scale = xs
    if fn_dtype is not None:
        hc.fn = hc.fn.astype(getattr(m.mx, fn_dtype))
    hc.eval()  # inference: the kernels are not taken in training mode
    return hc


def hyper_inputs(rng, D):
    return [normal(rng, 24, 4 * D, scale=(4 * D) ** -0.5), normal(rng, 24, scale=0.5),
            rng.uniform(0.5, 1.5, 3).astype(np.float32)]


@pytest.mark.parametrize("L", [1, 5])
def test_deepseek_v4_hyper_connection_collapse(rng, L):
    """HyperConnection: mixing weights from the RMS-normed streams, the fused
    kernel's Sinkhorn over the 4x4 combination (simd_sum column sums, bfloat4
    loads) and the streams' collapse, against the file's compiled ops."""
    D = 64
    x = normal(rng, 2, L, 4, D)

    def call(m, xs):
        collapsed, post, comb = hyper_connection(m, xs[1:], D)(xs[0].astype(m.mx.bfloat16))
        return [collapsed.astype(m.mx.float32), post, comb]

    results = run_three(HYPER, call, [x] + hyper_inputs(rng, D))
    assert_agree(results, ["collapsed", "post", "comb"], rtol=1e-2, atol=1e-2)  # collapsed is bfloat16
    for fallback in ("alloy_ops", "mlx_ops"):  # post and comb are float32
        for i, name in ((1, "post"), (2, "comb")):
            np.testing.assert_allclose(results["kernel"][i], results[fallback][i], rtol=1e-5, atol=1e-6,
                                       err_msg=f"{name}: kernel vs {fallback}")


@pytest.mark.parametrize("D,rows", [(64, 2), (4096, 1)])
def test_deepseek_v4_hyper_connection_apply_branch(rng, D, rows):
    """apply_branch over a short decode block (3 tokens) with an identity
    branch: the fused collapse-and-RMSNorm kernels (exact_hc_norm, and for one
    row at width 4096 exact_hc_normalized_norm, which also mixes) and the
    fused expansion (exact_hc_expand), against the file's ops."""
    x = normal(rng, rows, 3, 4, D)
    norm_w = rng.uniform(0.5, 1.5, D).astype(np.float32)

    def call(m, xs):
        mx = m.mx
        hc = hyper_connection(m, xs[2:], D, fn_dtype="bfloat16" if D == 4096 else None)
        norm = m.nn.RMSNorm(D, eps=1e-6)
        norm.weight = xs[1].astype(mx.bfloat16)
        return [hc.apply_branch(xs[0].astype(mx.bfloat16), norm, lambda c: c).astype(mx.float32)]

    results = run_three(HYPER, call, [x, norm_w] + hyper_inputs(rng, D))
    assert_agree(results, ["out"], rtol=2e-2, atol=2e-2)  # bfloat16 throughout
    want = {"hc_norm", "hc_expand"} if D == 64 else {"hc_normalized_norm", "hc_expand"}
    launched = " ".join(sorted(results["kernels launched"]))
    assert all(w in launched for w in want), launched


# --- mlx_vlm/models/fast_ops.py: affine-quantized MoE projections ------------

FAST_OPS = "mlx_vlm.models.fast_ops"


def quantized_switch(m, weights, bits):
    """mlx-vlm's QuantizedSwitchLinear holding `weights` (experts, out, in),
    quantized by the framework in bfloat16 (4 or 5 bits, groups of 64), with
    no bias (as the MoE uses it)."""
    mx = m.mx
    # The class fast_ops imports when called: the same sibling module of this load.
    switch_layers = m.__port_loader__.load("mlx_vlm.models.switch_layers")
    layer = switch_layers.QuantizedSwitchLinear(weights.shape[2], weights.shape[1], weights.shape[0],
                                                bias=False, group_size=64, bits=bits)
    layer.weight, layer.scales, layer.biases = mx.quantize(weights.astype(mx.bfloat16), group_size=64, bits=bits)
    return layer


@pytest.mark.parametrize("bits", [4, 5])
def test_fast_ops_affine_moe(rng, bits):
    """exact_affine_switch_gate_up (the up and gate projections of the
    selected experts in one kernel) and exact_affine_moe_down (the routed
    down projection, weighted by the router and added to the shared expert's
    output) for a decode block of 3 tokens, against what the file's MoE
    computes without Metal: MLX's gather_qmm through the same modules."""
    E, top_k, K, N, L = 4, 2, 512, 64, 3
    xs = [normal(rng, 1, L, K), normal(rng, E, N, K, scale=K**-0.5), normal(rng, E, N, K, scale=K**-0.5),
          normal(rng, 1, L, top_k, K), normal(rng, E, N, K, scale=K**-0.5),
          # Distinct experts per token, as top-k routing gives: the kernels
          # pair tokens that share an expert and assume no token lists one twice.
          np.stack([rng.permutation(E)[:top_k] for _ in range(L)])[None].astype(np.int32),
          rng.random((1, L, top_k)).astype(np.float32), normal(rng, 1, L, N)]

    def call(m, xs):
        mx = m.mx
        x, up_w, gate_w, h, down_w, idx, route, shared = xs
        x, h, shared = x.astype(mx.bfloat16), h.astype(mx.bfloat16), shared.astype(mx.bfloat16)
        up_proj, gate_proj, down_proj = (quantized_switch(m, w, bits) for w in (up_w, gate_w, down_w))
        pair = m.exact_affine_switch_gate_up(types.SimpleNamespace(up_proj=up_proj, gate_proj=gate_proj), x, idx)
        if pair is None:  # as the file's batch > 1 branch does
            projected = mx.expand_dims(x, (-2, -3))
            pair = (up_proj(projected, idx).squeeze(-2), gate_proj(projected, idx).squeeze(-2))
        out = m.exact_affine_moe_down(down_proj, h, idx, route, shared)
        if out is None:
            y = down_proj(mx.expand_dims(h, -2), idx).squeeze(-2).astype(mx.float32)
            out = ((y * route[..., None]).sum(-2) + shared.astype(mx.float32)).astype(mx.bfloat16)
        # The dequantized weights in float32 (scale * code + bias, unrounded).
        weights = [mx.dequantize(p.weight, p.scales.astype(mx.float32), p.biases.astype(mx.float32),
                                 group_size=64, bits=bits) for p in (up_proj, gate_proj, down_proj)]
        return [a.astype(mx.float32) for a in (*pair, out, *weights)]

    results = run_three(FAST_OPS, call, xs)
    launched = " ".join(sorted(results["kernels launched"]))
    assert "gate_up" in launched and "down" in launched, launched
    # float64 over the kernel run's own dequantized weights and bfloat16 inputs.
    x, h, shared = (np.array(ax.array(a).astype(ax.bfloat16).astype(ax.float32)).astype(np.float64)
                    for a in (xs[0], xs[3], xs[7]))
    idx, route = xs[5][0], xs[6][0].astype(np.float64)
    up_w, gate_w, down_w = (w.astype(np.float64) for w in results["kernel"][3:6])
    want_up = np.einsum("lk,lsnk->lsn", x[0], up_w[idx])[None]
    want_gate = np.einsum("lk,lsnk->lsn", x[0], gate_w[idx])[None]
    want_down = (np.einsum("lsk,lsnk->lsn", h[0], down_w[idx]) * route[..., None]).sum(1)[None] + shared
    # up and gate: one bfloat16 rounding; down: each route's product rounded,
    # then the weighted sum and the shared output added in bfloat16.
    for got, want, name, tol in zip(results["kernel"], (want_up, want_gate, want_down), ("up", "gate", "down"),
                                    (1e-2, 1e-2, 3e-2)):
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=name)
    for i, name, tol in ((0, "up", 2e-2), (1, "gate", 2e-2), (2, "down", 4e-2)):
        np.testing.assert_allclose(results["kernel"][i], results["alloy_ops"][i], rtol=tol, atol=tol,
                                   err_msg=f"{name}: kernel vs alloy_ops")
    # Real MLX's CPU gather_qmm accumulates bfloat16 products in bfloat16
    # (errors up to 0.2 on values near 2.6, measured): its answer only roughly.
    for got, want in zip(results["kernel"][:3], results["mlx_ops"][:3]):
        np.testing.assert_allclose(got, want, rtol=0.1, atol=0.3)
