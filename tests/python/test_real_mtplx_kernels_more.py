"""More of mtplx 2.12.2's Metal kernels, run unchanged on Alloy (its
attention kernels and verify GEMVs have files of their own:
test_real_mlx_paged_attention.py, test_real_mlx_nax_kernels.py,
test_real_mlx_quantized_gemv_kernels.py). Each test calls the package's own
Python entry point, checks that the Metal kernel launched (not an ops
fallback, not a bail), and compares with a numpy reference written here:

- `kernels/qsa_indexer_prefill.py`, the sparse-attention indexer's prefill:
  its score kernel (Metal 4 MPP `matmul2d` on cooperative tensors, reading
  strided views) and its exact top-k selectors, the 256/512-thread radix and
  bitonic network and the one-SIMD-group selector built on `simd_sum` and
  `simd_prefix_exclusive_sum`, on normal and heavily tied score planes.
- `kernels/qsa_indexer_prepare.py`: RMSNorm and partial RoPE of the
  indexer's queries and of its pooled key blocks.
- `kernels/sdpa_gqa_packed_quant.py`: decode attention reading int8 and
  nibble-packed int4 KV with a float32 scale per row.
- `nax_verify.py`'s `nax_qmm_m16`: 4-bit weights dequantized into
  threadgroup tiles and multiplied by `matmul2d` through tensor slices.
- `verify_qmv.py`: 4-bit GEMVs whose activation sums are bfloat/half
  arithmetic (`x[i] + x[i + 1] + ...` on `T` values).
- `qwen_row_owned_router.py`: the exact top-8 of 256 experts (`simd_max`
  with ties) and its bfloat16 combine tail.
- `gdn_capture.py`: the gated-delta recurrence with a state captured per
  step, and the tape kernel whose deltas a replay kernel turns back into
  the state.

References are float64 numpy. Where the MSL rounds to bfloat16 or half at
each step (documented in the kernels as their exactness contract), the
reference rounds at the same places, and the comment there says so.

The MPP score kernel fills its cooperative tensors element by element in
Apple's lane layout, so on CUDA it is a strict xfail, as in
test_real_mlx_nax_kernels.py. `nax_qmm_m16` only uses the API
(tensor slices, `run`, `store`) and must pass everywhere.
"""
import os
from types import SimpleNamespace

import numpy as np
import pytest

import alloy.core as mx
import alloy.nn as nn
from real_mlx_code import load
from references64 import tail_causal_attention

DEVICE = os.environ.get("ALLOY_TEST_DEVICE", "cpu")
cuda_layout = pytest.mark.xfail(DEVICE == "gpu", strict=True,
                                reason="CUDA's cooperative tensors use the tensor cores' lane layout, not Apple's")

MANTISSA_BITS = {"bfloat16": 7, "float16": 10, "float32": 23}
MIN_NORMAL_EXPONENT = {"bfloat16": -126, "float16": -14, "float32": -126}


def as64(x):
    return np.array(x.astype(mx.float32)).astype(np.float64)


def rand(rng, shape, dtype, scale=1.0):
    return mx.array((rng.standard_normal(shape) * scale).astype(np.float32)).astype(dtype)


def rounded(x, dtype):
    """float32 values rounded to `dtype` (to nearest, ties to even) and
    returned as float64: what a Metal `T(float)` conversion gives."""
    x32 = np.asarray(x, dtype=np.float32)
    if dtype == "float32":
        return x32.astype(np.float64)
    if dtype == "float16":
        return x32.astype(np.float16).astype(np.float64)
    bits = x32.view(np.uint32).astype(np.uint64)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def ulp(x, dtype):
    """The spacing of `dtype` values at |x|."""
    exponent = np.floor(np.log2(np.maximum(np.abs(x), np.finfo(np.float64).tiny)))
    exponent = np.maximum(exponent, MIN_NORMAL_EXPONENT[dtype])
    return 2.0 ** (exponent - MANTISSA_BITS[dtype])


def assert_within(got, want, tol, what):
    assert got.shape == want.shape, (what, got.shape, want.shape)
    assert np.isfinite(got).all(), what
    excess = np.abs(got - want) - tol
    worst = np.unravel_index(np.argmax(excess), excess.shape)
    assert excess.max() <= 0, (f"{what}: {int((excess > 0).sum())} of {got.size} elements off; worst at {worst}: "
                               f"got {got[worst]!r}, want {want[worst]!r}, tolerance {np.broadcast_to(tol, got.shape)[worst]!r}")


def launched(module, fn, *args, kernels=1, **kwargs):
    """fn(*args, **kwargs), after checking that it launched `kernels` Metal
    kernels (an ops fallback or a bail launches none)."""
    loader = module.__port_loader__
    before = loader.launches()
    out = fn(*args, **kwargs)
    assert out is not None, f"{fn.__name__} declined the inputs"
    assert loader.launches() >= before + kernels, f"{fn.__name__}: its Metal kernel did not run"
    return out


def affine4_weights(rng, n, k, group_size, dtype):
    """Random 4-bit affine weights in MLX's layout: codes (n, k), packed
    uint32 words (code j of a word in bits 4j..4j+3), scales and biases of
    dtype per group of `group_size` inputs."""
    codes = rng.integers(0, 16, (n, k))
    words = (codes.reshape(n, k // 8, 8) << (4 * np.arange(8))).sum(-1).astype(np.uint32)
    scales = rng.uniform(0.005, 0.02, (n, k // group_size))
    biases = -8 * scales + rng.normal(0, 0.004, scales.shape)
    as_t = lambda a: mx.array(a.astype(np.float32)).astype(getattr(mx, dtype))  # noqa: E731
    return codes, mx.array(words), as_t(scales), as_t(biases)


# ---- qsa_indexer_prefill: MPP scores and exact top-k -------------------------

@cuda_layout
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_mtplx_qsa_indexer_mpp_scores(rng, dtype):
    module = load("mtplx.kernels.qsa_indexer_prefill", "alloy", kernels=True)
    module.qsa_indexer_select_nax_available = lambda: True  # its Metal 4 tensor-unit (M5) gate
    dt = getattr(mx, dtype)
    rows, blocks = 21, 45  # a partial 16-row query tile and a partial 32-key tile
    # Views, as the model passes them and as the kernel reads them (through
    # its stride arrays, ensure_row_contiguous=False): queries [1, S, 4, 128]
    # over head-major storage, pooled keys a slice of a longer cache.
    q = rand(rng, (1, 4, rows, 128), dt).transpose(0, 2, 1, 3)
    pooled = rand(rng, (1, blocks + 7, 128), dt)[:, 3:blocks + 3]
    assert module.qsa_indexer_prefill_scores_mpp_supported(q, pooled)
    scores = launched(module, module.qsa_indexer_prefill_scores_mpp, q, pooled)
    # Score of (row, block): ReLU of each head's dot product, summed over the
    # four heads, over sqrt(128).
    per_head = np.einsum("shd,nd->shn", as64(q)[0], as64(pooled)[0])
    want = np.maximum(per_head, 0).sum(1) / np.sqrt(128)
    assert scores.shape == (rows, blocks) and scores.dtype == mx.float32
    # float32 sums of exact products: float32 rounding only.
    np.testing.assert_allclose(as64(scores), want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def score_plane(rng, kind, rows, blocks):
    if kind == "normal":
        return rng.standard_normal((rows, blocks)).astype(np.float32)
    if kind == "ties":
        # Four values, the largest 0: zeros are ordered by the 1e-12
        # adjustment alone (-block * 1e-12: the smaller id wins), the others
        # tie exactly (1e-12 rounds away).
        return (rng.integers(-3, 1, (rows, blocks)) / 2).astype(np.float32)
    # "plateau": three values, so the K-th largest sits inside a tie of
    # about blocks / 3 equal scores (more than the 64 the network selector
    # sorts by insertion: it finishes those by radix passes).
    return (rng.integers(1, 4, (rows, blocks)) / 2).astype(np.float32)


def topk_reference(row, visible, topk):
    """The selectors' contract: scores adjusted to `score - block * 1e-12`
    (float32 arithmetic, as in the kernel), the top k of the visible blocks
    by adjusted score, a tie going to the larger block id (the kernels'
    composite key), returned in ascending block order. Also the adjusted
    scores."""
    adjusted = row[:visible] - np.arange(visible, dtype=np.float32) * np.float32(1e-12)
    order = sorted(range(visible), key=lambda b: (-float(adjusted[b]), -b))
    return sorted(order[:min(topk, visible)]), adjusted


TOPK_CASES = [  # selector, rows, blocks, ratio, top-k, first query position, score plane
    ("network", 5, 300, 4, 16, 1190, "normal"),
    ("network", 3, 400, 2, 300, 797, "plateau"),  # K > 256: a 512-thread network
    ("simd", 5, 300, 4, 16, 1190, "ties"),
    ("simd", 8, 80, 2, 64, 124, "plateau"),  # rows 0-2 see fewer complete blocks than K, rows 5-7 more
]


@pytest.mark.parametrize("selector,rows,blocks,ratio,topk,pos,plane", TOPK_CASES)
def test_mtplx_qsa_indexer_prefill_topk(rng, monkeypatch, selector, rows, blocks, ratio, topk, pos, plane):
    monkeypatch.setenv("MTPLX_QSA_PREFILL_TOPK_KERNEL", selector)  # read on each call
    module = load("mtplx.kernels.qsa_indexer_prefill", "alloy", kernels=True)
    module.qsa_indexer_select_nax_available = lambda: True  # the simd selector's tensor-unit GPU gate
    scores = score_plane(rng, plane, rows, blocks)
    total = pos + rows
    logical = total // ratio
    ids, valid, adjusted = launched(module, module.qsa_indexer_prefill_topk_metal, mx.array(scores),
                                    pos_start=pos, total_tokens=total, block_topk=topk, compress_ratio=ratio,
                                    logical_blocks=logical, mode="blocks")
    names = module.__port_loader__.kernels_launched()
    assert all(("_simd_" in name) == (selector == "simd") for name in names), names
    assert [a.shape for a in (ids, valid, adjusted)] == [(rows, topk)] * 3
    assert (ids.dtype, valid.dtype, adjusted.dtype) == (mx.int32, mx.bool_, mx.float32)
    ids, valid, adjusted = np.array(ids), np.array(valid), np.array(adjusted)
    for r in range(rows):
        visible = min(logical, (pos + r + 1) // ratio)  # complete blocks the query row can see
        want, want_adjusted = topk_reference(scores[r], visible, topk)
        k = len(want)
        assert ids[r, :k].tolist() == want, f"row {r}"
        assert valid[r, :k].all() and not valid[r, k:].any(), f"row {r}"
        np.testing.assert_array_equal(adjusted[r, :k], want_adjusted[want])  # exact: the same float32 arithmetic
        assert (ids[r, k:] == 0).all() and np.isneginf(adjusted[r, k:]).all(), f"row {r}: unused slots"


def test_mtplx_qsa_indexer_prefill_topk_masks(rng):
    """The network selector's two other outputs: a dense [1, 1, S, T] mask,
    and per row the tokens of its blocks, ordered by ascending adjusted score,
    then the row's incomplete causal tail."""
    module = load("mtplx.kernels.qsa_indexer_prefill", "alloy", kernels=True)
    rows, blocks, ratio, topk, pos = 4, 120, 4, 16, 470
    total, logical = pos + rows, (pos + rows) // ratio
    scores = score_plane(rng, "ties", rows, blocks)
    args = dict(pos_start=pos, total_tokens=total, block_topk=topk, compress_ratio=ratio, logical_blocks=logical)
    mask = launched(module, module.qsa_indexer_prefill_topk_metal, mx.array(scores), mode="dense_mask", **args)
    tokens, token_valid = launched(module, module.qsa_indexer_prefill_topk_metal, mx.array(scores),
                                   mode="row_tokens", **args)
    assert mask.shape == (1, 1, rows, total) and mask.dtype == mx.bool_
    assert tokens.shape == token_valid.shape == (rows, topk * ratio + ratio)
    mask, tokens, token_valid = np.array(mask)[0, 0], np.array(tokens), np.array(token_valid)
    for r in range(rows):
        qpos = pos + r
        complete = (qpos + 1) // ratio
        chosen, adjusted = topk_reference(scores[r], min(logical, complete), topk)
        tail = [t for t in range(complete * ratio, complete * ratio + ratio) if t <= qpos]
        want_mask = np.zeros(total, bool)
        for b in chosen:
            want_mask[b * ratio:(b + 1) * ratio] = True
        want_mask[tail] = True
        np.testing.assert_array_equal(mask[r], want_mask, err_msg=f"row {r}")
        # Blocks by ascending adjusted score (equal scores by ascending id),
        # after min(K, logical) - k invalid slots, then the tail's slots.
        by_score = sorted(chosen, key=lambda b: (float(adjusted[b]), b))
        want_ids = np.zeros(topk * ratio + ratio, np.int64)
        want_valid = np.zeros(topk * ratio + ratio, bool)
        first = (min(topk, logical) - len(chosen)) * ratio
        for j, b in enumerate(by_score):
            want_ids[first + j * ratio:first + (j + 1) * ratio] = b * ratio + np.arange(ratio)
            want_valid[first + j * ratio:first + (j + 1) * ratio] = True
        want_ids[topk * ratio:topk * ratio + len(tail)] = tail
        want_valid[topk * ratio:topk * ratio + len(tail)] = True
        np.testing.assert_array_equal(token_valid[r], want_valid, err_msg=f"row {r}")
        np.testing.assert_array_equal(tokens[r], want_ids, err_msg=f"row {r}")


# ---- qsa_indexer_prepare: RMSNorm + partial RoPE ------------------------------

def norm_rope_reference(x, weight, inv_freq, positions, eps, attention_scaling, dtype):
    """RMSNorm then non-interleaved RoPE of the first 2 * len(inv_freq)
    dims. The kernels round `x * inv_rms` to T and multiply by the T weight
    in T arithmetic (two roundings), then round each rotated value once."""
    half = len(inv_freq)
    inv_rms = 1 / np.sqrt((x ** 2).mean(-1, keepdims=True) + eps)
    normed = rounded(weight * rounded(x * inv_rms, dtype), dtype)
    theta = (np.asarray(positions, np.float32)[..., None] * inv_freq).astype(np.float64)  # float32, as the kernel
    cos, sin = np.cos(theta) * attention_scaling, np.sin(theta) * attention_scaling
    a, b = normed[..., :half], normed[..., half:2 * half]
    out = normed.copy()
    out[..., :half] = rounded(a * cos - b * sin, dtype)
    out[..., half:2 * half] = rounded(b * cos + a * sin, dtype)
    return out


@pytest.mark.parametrize("dtype,rows,heads,dim,rotary,pos,scaling", [
    ("bfloat16", 3, 2, 128, 64, 1000, 1.0),
    ("float16", 2, 3, 96, 96, 5, 1.3),
])
def test_mtplx_qsa_indexer_prepare(rng, dtype, rows, heads, dim, rotary, pos, scaling):
    module = load("mtplx.kernels.qsa_indexer_prepare", "alloy", kernels=True)
    dt = getattr(mx, dtype)
    inv_freq = (1 / 10000 ** (np.arange(0, rotary, 2) / rotary)).astype(np.float32)
    weight = rand(rng, (dim,), dt)
    # Queries: heads 1.. of a head-major [1, H + 1, S, D] buffer (a strided view).
    raw_q = rand(rng, (1, heads + 1, rows, dim), dt, 2.0).transpose(0, 2, 1, 3)[:, :, 1:, :]
    out = launched(module, module.qsa_indexer_prepare_queries_metal, raw_q, weight, mx.array(inv_freq),
                   pos_start=pos, eps=1e-6, attention_scaling=scaling)
    positions = np.broadcast_to((pos + np.arange(rows))[:, None], (rows, heads))
    want = norm_rope_reference(as64(raw_q)[0], as64(weight), inv_freq, positions, 1e-6, scaling, dtype)
    assert out.shape == (1, rows, heads, dim) and out.dtype == dt
    # One ulp of T at the largest value: a rounding of x * inv_rms that falls
    # the other way moves an output by about that much.
    assert_within(as64(out)[0], want, ulp(np.abs(want).max(), dtype), "prepared queries")

    # Keys: blocks of `ratio` tokens averaged in float32 and rounded to T,
    # then the same chain at the block's first token position.
    ratio, pooled_blocks, block_start = 4, 3, 7
    raw_k = rand(rng, (1, dim, pooled_blocks * ratio), dt).transpose(0, 2, 1)  # [1, T, D], strided
    pooled = launched(module, module.qsa_indexer_pool_keys_metal, raw_k, weight, mx.array(inv_freq),
                      block_start=mx.array([block_start], dtype=mx.int32), compress_ratio=ratio, eps=1e-6,
                      attention_scaling=scaling)
    mean = rounded(as64(raw_k)[0].reshape(pooled_blocks, ratio, dim).sum(1) / ratio, dtype)
    want = norm_rope_reference(mean, as64(weight), inv_freq, (block_start + np.arange(pooled_blocks)) * ratio,
                               1e-6, scaling, dtype)
    assert pooled.shape == (1, pooled_blocks, dim) and pooled.dtype == dt
    assert_within(as64(pooled)[0], want, ulp(np.abs(want).max(), dtype), "pooled keys")


# ---- sdpa_gqa_packed_quant: attention over q8 / q4 KV ------------------------

@pytest.mark.parametrize("bits,dtype,ql,gqa,hk,capacity,offset", [
    (4, "bfloat16", 3, 2, 2, 64, 50),
    (8, "float16", 6, 3, 1, 50, 45),  # six query rows: both float4 query banks
])
def test_mtplx_gqa_packed_quant_attention(rng, monkeypatch, bits, dtype, ql, gqa, hk, capacity, offset):
    # 32 block lanes instead of 256: the walk reads the same rows; fewer
    # lanes keep the CPU run short. Read on each call.
    monkeypatch.setenv("MTPLX_GQA_PACKED_SDPA_BLOCKS", "32")
    module = load("mtplx.kernels.sdpa_gqa_packed_quant", "alloy", kernels=True)
    d, dt = 256, getattr(mx, dtype)
    q = rand(rng, (1, hk * gqa, ql, d), dt)
    packed, dequantized = [], []
    for _ in range(2):  # K, V: rowwise symmetric codes with a float32 scale per row
        if bits == 8:
            codes = rng.integers(-127, 128, (1, hk, capacity, d))
            packed.append(mx.array(codes.astype(np.int8)))
            scale = rng.uniform(0.004, 0.012, (1, hk, capacity, 1)).astype(np.float32)
        else:  # two codes a byte, even | odd << 4, each stored as code + 8
            codes = rng.integers(-8, 8, (1, hk, capacity, d))
            nibbles = codes + 8
            packed.append(mx.array((nibbles[..., 0::2] | (nibbles[..., 1::2] << 4)).astype(np.uint8)))
            scale = rng.uniform(0.06, 0.2, (1, hk, capacity, 1)).astype(np.float32)
        packed.append(mx.array(scale))
        dequantized.append(codes * scale.astype(np.float64))
    out = launched(module, module.sdpa_gqa_packed_tail_quant, queries=q, k_q=packed[0], k_scale=packed[1],
                   v_q=packed[2], v_scale=packed[3], offset=offset, scale=d ** -0.5, bits=bits, kernels=2)
    want = tail_causal_attention(as64(q), dequantized[0], dequantized[1], offset, d ** -0.5)
    assert out.shape == q.shape and out.dtype == dt
    tol = 2e-3 if dtype == "float16" else 1.5e-2
    np.testing.assert_allclose(as64(out), want, rtol=tol, atol=tol)


# ---- nax_verify.nax_qmm_m16: matmul2d on dequantized tiles --------------------

@pytest.mark.parametrize("m,k,n,group_size,dtype", [(7, 512, 64, 64, "bfloat16"), (16, 256, 96, 128, "float16")])
def test_mtplx_nax_qmm_m16_matmul2d(rng, m, k, n, group_size, dtype):
    module = load("mtplx.nax_verify", "alloy", kernels=True)
    codes, words, scales, biases = affine4_weights(rng, n, k, group_size, dtype)
    x = rand(rng, (m, k), getattr(mx, dtype))
    y = launched(module, module.nax_qmm_m16, x, words, scales, biases, group_size=group_size)
    # The kernel stores each weight in its threadgroup tile as
    # T(float(code) * scale + bias): emulated in float32, rounded to T.
    s32 = np.repeat(np.array(scales.astype(mx.float32)), group_size, axis=1)
    b32 = np.repeat(np.array(biases.astype(mx.float32)), group_size, axis=1)
    w = rounded(codes.astype(np.float32) * s32 + b32, dtype)
    x64 = as64(x)
    want = x64 @ w.T
    assert y.shape == (m, n) and y.dtype == getattr(mx, dtype)
    # Rounding the float32 sums to T, plus float32 accumulation error.
    tol = ulp(want, dtype) + 1e-6 * (np.abs(x64) @ np.abs(w).T)
    assert_within(as64(y), want, tol, "nax_qmm_m16")


# ---- verify_qmv: 4-bit GEMVs with T-typed activation sums --------------------

@pytest.mark.parametrize("fn,m,dtype,group_size", [
    ("multi3_qmv4_matmul", 3, "bfloat16", 64),
    ("stocklike_qmv4_matmul", 5, "float16", 128),
])
def test_mtplx_verify_qmv4(rng, fn, m, dtype, group_size):
    module = load("mtplx.verify_qmv", "alloy", kernels=True)
    K, N = 1024, 24
    codes, words, scales, biases = affine4_weights(rng, N, K, group_size, dtype)
    layer = nn.QuantizedLinear(K, N, bias=False, group_size=group_size, bits=4)
    layer.weight, layer.scales, layer.biases = words, scales, biases
    x = rand(rng, (1, m, K), getattr(mx, dtype))
    y = launched(module, getattr(module, fn), x, layer)  # ineligible calls fall back to the layer: no launch
    x64, s64, b64 = as64(x)[0], as64(scales), as64(biases)
    groups = K // group_size
    # y = sum over groups of scale * sum(code * x) + bias * sum(x). The kernels
    # add each run of four activations as T values (`x[i] + x[i + 1] +
    # x[i + 2] + x[i + 3]` on `const device T*`, rounded to T after every
    # add) before the float accumulation: the bias term uses those sums.
    x4 = x64.reshape(m, K // 4, 4)
    sums4 = rounded(rounded(rounded(x4[..., 0] + x4[..., 1], dtype) + x4[..., 2], dtype) + x4[..., 3], dtype)
    group_sums = sums4.reshape(m, groups, group_size // 4).sum(-1)
    dots = np.einsum("ngk,mgk->mng", codes.reshape(N, groups, group_size), x64.reshape(m, groups, group_size))
    want = (dots * s64).sum(-1) + group_sums @ b64.T
    assert y.shape == (1, m, N) and y.dtype == getattr(mx, dtype)
    scale = np.abs(dots * s64).sum(-1) + np.abs(group_sums) @ np.abs(b64).T
    assert_within(as64(y)[0], want, ulp(want, dtype) + 1e-6 * scale, fn)


# ---- qwen_row_owned_router: exact top-8 and combine -------------------------

def test_mtplx_qwen_row_owned_router(rng):
    module = load("mtplx.qwen_row_owned_router", "alloy", kernels=True)
    rows, experts = 6, 256
    logits = rng.standard_normal((rows, experts)) * 2
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p = rounded(p / p.sum(-1, keepdims=True), "bfloat16")
    # Rows 0-2: the row's top probability given to ten experts spread over
    # the eight SIMD groups, so ties decide both within a group (simd_max
    # over ids) and at the 8th-place cutoff of the merge.
    for r in range(3):
        p[r, rng.choice(experts, 10, replace=False)] = p[r].max()
    ids, scores = launched(module, module.qwen_row_owned_route, mx.array(p.astype(np.float32)).astype(mx.bfloat16))
    assert ids.shape == scores.shape == (rows, 8)
    assert ids.dtype == mx.uint32 and scores.dtype == mx.bfloat16
    f32 = np.float32
    for r in range(rows):
        # Top 8 by probability, a tie going to the larger expert id; output in
        # ascending order (MLX's top partition). The denominator is a bfloat
        # sum in that order (each float add rounded to bfloat16), each score
        # a float division rounded to bfloat16.
        top = sorted(range(experts), key=lambda e: (-p[r, e], -e))[:8][::-1]
        denominator = 0.0
        for e in top:
            denominator = rounded(f32(denominator) + f32(p[r, e]), "bfloat16")
        want_scores = rounded(p[r, top].astype(f32) / f32(denominator), "bfloat16")
        assert np.array(ids)[r].tolist() == top, f"row {r}"
        np.testing.assert_array_equal(as64(scores)[r], want_scores, err_msg=f"row {r}")


def test_mtplx_qwen_combine_tail(rng):
    module = load("mtplx.qwen_row_owned_router", "alloy", kernels=True)
    for rows in (2, 8):  # one kernel, two launch geometries
        routed = rand(rng, (1, rows, 8, 2048), mx.bfloat16)
        weights = rand(rng, (1, rows, 8), mx.bfloat16, 0.3)
        out = launched(module, getattr(module, f"qwen_combine_tail_m{rows}"), routed, weights)
        assert out.shape == (1, rows, 2048) and out.dtype == mx.bfloat16
        # The kernel keeps a bfloat accumulator: each product and each running
        # sum is computed in float and rounded to bfloat16, experts in order.
        r64, w64 = as64(routed)[0], as64(weights)[0]
        acc = np.zeros((rows, 2048))
        for e in range(8):
            product = rounded(r64[:, e] * w64[:, e:e + 1], "bfloat16")  # exact in float32: 8-bit by 8-bit
            acc = rounded(acc.astype(np.float32) + product.astype(np.float32), "bfloat16")
        np.testing.assert_array_equal(as64(out)[0], acc, err_msg=f"{rows} rows")


# ---- gdn_capture: the gated-delta recurrence --------------------------------

GDN_SHAPE = dict(B=2, T=3, Hk=2, Hv=4, Dk=64, Dv=16)
GDN_TYPES = [("bfloat16", "float32"), ("float16", "float16")]  # inputs, state


def gated_delta_reference(q, k, v, g, beta, state, state_dtype):
    """Per step t, for each value head (sharing key head h // (Hv / Hk)):
    S = g S; delta = beta (v - S k); S = S + delta k^T; y = S q. The
    kernels keep S in float32 but store it as the state type after every
    step and carry the stored value on: rounded here at the same point.
    Returns y [B, T, Hv, Dv], the states after each step [B, T, Hv, Dv, Dk]
    and the deltas [B, T, Hv, Dv]."""
    steps, repeat = q.shape[1], v.shape[2] // q.shape[2]
    ys, states, deltas = [], [], []
    for t in range(steps):
        qt, kt = (np.repeat(a[:, t], repeat, axis=1) for a in (q, k))
        state = state * g[:, t, :, None, None]
        delta = (v[:, t] - np.einsum("bhvk,bhk->bhv", state, kt)) * beta[:, t, :, None]
        state = state + delta[..., None] * kt[:, :, None, :]
        ys.append(np.einsum("bhvk,bhk->bhv", state, qt))
        state = rounded(state, state_dtype)
        states.append(state)
        deltas.append(delta)
    return np.stack(ys, 1), np.stack(states, 1), np.stack(deltas, 1)


def gdn_gates(rng):
    shape = (GDN_SHAPE["B"], GDN_SHAPE["T"], GDN_SHAPE["Hv"])
    g, beta = rng.uniform(0.5, 1.0, shape), rng.uniform(0.05, 1.0, shape)
    return mx.array(g.astype(np.float32)), mx.array(beta.astype(np.float32))


def state_tolerance(want, state_dtype):
    """The stored state's rounding, plus float32 rounding; for half states,
    a rounding to half that fell the other way at an earlier step (the
    float32 state is not the float64 one) and was carried on: one ulp at the
    state's largest values."""
    largest = np.abs(want).max()
    return ulp(want, state_dtype) + max(1e-5 * largest, ulp(largest, state_dtype) if state_dtype != "float32" else 0)


def check_gdn(y, states, want_y, want_states, in_dtype, state_dtype):
    # y is rounded once to the input type, from a float32 state (which, for
    # half states, carries the roundings described above).
    assert_within(y, want_y, ulp(want_y, in_dtype) + 2e-4 * np.abs(want_y).max(), "y")
    assert_within(states, want_states, state_tolerance(want_states, state_dtype), "states")


@pytest.mark.parametrize("in_dtype,state_dtype", GDN_TYPES)
def test_mtplx_gdn_gated_delta_capture(rng, in_dtype, state_dtype):
    module = load("mtplx.gdn_capture", "alloy", kernels=True)
    B, T, Hk, Hv, Dk, Dv = GDN_SHAPE.values()
    it, st = getattr(mx, in_dtype), getattr(mx, state_dtype)
    q, k = rand(rng, (B, T, Hk, Dk), it, 0.2), rand(rng, (B, T, Hk, Dk), it, 0.2)
    v = rand(rng, (B, T, Hv, Dv), it)
    g, beta = gdn_gates(rng)
    state = rand(rng, (B, Hv, Dv, Dk), st, 0.3)
    y, states = launched(module, module._linear_gated_delta_capture, q, k, v, g, beta, state)
    assert y.shape == (B, T, Hv, Dv) and y.dtype == it
    assert states.shape == (B, T, Hv, Dv, Dk) and states.dtype == st
    want_y, want_states, _ = gated_delta_reference(as64(q), as64(k), as64(v), as64(g), as64(beta), as64(state),
                                                   state_dtype)
    check_gdn(as64(y), as64(states), want_y, want_states, in_dtype, state_dtype)


def qk_from_conv(raw, dtype, key):
    """The from-conv kernels' q / k: each head RMS-normalized in float32,
    rounded to T, then scaled (q by 1/Dk, k by T(1/sqrt(Dk))) and rounded to
    T again."""
    dk = raw.shape[-1]
    raw32 = raw.astype(np.float32)
    inv = np.float32(1) / np.sqrt((raw32 * raw32).sum(-1, keepdims=True, dtype=np.float32) / np.float32(dk)
                                  + np.float32(1e-6))
    normed = rounded(raw32 * inv, dtype)
    factor = rounded(1 / np.sqrt(dk), dtype) if key else 1 / dk
    return rounded(normed.astype(np.float32) * np.float32(factor), dtype)


@pytest.mark.parametrize("in_dtype,state_dtype", GDN_TYPES)
def test_mtplx_gdn_tape_capture_and_replay(rng, monkeypatch, in_dtype, state_dtype):
    monkeypatch.delenv("MTPLX_LINEAR_GDN_TAPE_IMPL", raising=False)  # the file's own tape kernel
    module = load("mtplx.gdn_capture", "alloy", kernels=True)
    B, T, Hk, Hv, Dk, Dv = GDN_SHAPE.values()
    key_dim = Hk * Dk
    gdn = SimpleNamespace(conv_dim=2 * key_dim + Hv * Dv, head_k_dim=Dk, head_v_dim=Dv, num_k_heads=Hk,
                          num_v_heads=Hv, key_dim=key_dim)
    it, st = getattr(mx, in_dtype), getattr(mx, state_dtype)
    conv = rand(rng, (B, T, gdn.conv_dim), it, 0.5)  # [q heads | k heads | v heads] per token
    g, beta = gdn_gates(rng)
    state = rand(rng, (B, Hv, Dv, Dk), st, 0.3)
    y, final, tape = launched(module, module._linear_gated_delta_from_conv_tape_capture, conv, g, beta, state, gdn)
    assert y.shape == (B, T, Hv, Dv) and y.dtype == it
    assert final.shape == state.shape and final.dtype == st
    assert tape.shape == (B, T, Hv, Dv) and tape.dtype == mx.float32
    c64 = as64(conv)
    q = qk_from_conv(c64[..., :key_dim].reshape(B, T, Hk, Dk), in_dtype, key=False)
    k = qk_from_conv(c64[..., key_dim:2 * key_dim].reshape(B, T, Hk, Dk), in_dtype, key=True)
    v = c64[..., 2 * key_dim:].reshape(B, T, Hv, Dv)
    want_y, want_states, want_deltas = gated_delta_reference(q, k, v, as64(g), as64(beta), as64(state),
                                                             state_dtype)
    check_gdn(as64(y), as64(final)[:, None], want_y, want_states[:, -1:], in_dtype, state_dtype)
    # The tape holds the float32 deltas.
    assert_within(as64(tape), want_deltas, 1e-4 * np.abs(want_deltas).max(), "tape")

    # Replaying the first two steps' deltas from the initial state gives the
    # state after step 2.
    replayed = launched(module, module._linear_gated_delta_from_conv_tape_replay, tape, conv, g, state, gdn, steps=2)
    assert replayed.shape == state.shape and replayed.dtype == st
    assert_within(as64(replayed), want_states[:, 1], state_tolerance(want_states[:, 1], state_dtype),
                  "replayed state")
