"""ZMLX 0.10's mixture-of-experts kernels on real MLX with alloy.mlx, imported
as its users do (`from zmlx.kernels import moe`, nothing patched): top-k
gating (the top-2, SIMD, two-SIMD-group and threadgroup kernels, with and
without bias and renormalisation), the router top-k kernels, DeepSeek's
grouped sigmoid router, dispatch, every combine variant and the streaming and
vectorised gather-combines, on fresh random inputs against float64 numpy
and MLX's own ops; each call checks that ZMLX launched Alloy's kernel
(zmlx_checks.launched)."""
import numpy as np
import pytest

import mlx.core as mx

import alloy.mlx  # noqa: F401  (before ZMLX builds its kernels)

try:
    from zmlx.kernels import moe
except ImportError as e:  # not a skip: the Makefile's venv step installs it
    raise ImportError(f"{e}: these tests need ZMLX: pip install --no-deps 'zmlx==0.10.0'") from e

from zmlx_checks import (TOL, arr, check_topk, close, deepseek_scores, f64, gather_setup, launched,  # noqa: E402
                         softmax64)


# ---------------------------------------------------------------------------
# moe: gating
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("D,tg", [(20, 256), (64, 256), (300, 256), (1000, 32)])
def test_top2_gating_softmax(rng, D, tg):
    x = arr(rng, 3, 5, D)
    name = "kk_topk_gating_simd" if D <= 32 else "kk_top2_gating"
    w, idx = launched(name, moe.top2_gating_softmax, x, threadgroup=tg)
    x64 = f64(x)
    check_topk(w, idx, x64, 2, lambda i: softmax64(np.take_along_axis(x64.reshape(-1, D), i, -1)), "desc")


@pytest.mark.parametrize("D,k,name", [(24, 4, "kk_topk_gating_simd"), (32, 8, "kk_topk_gating_simd"),
                                      (300, 3, "kk_topk_gating_D"), (50, 6, "kk_topk_gating_D")])
def test_topk_gating_softmax(rng, D, k, name):
    x = arr(rng, 2, 7, D, scale=2.0)
    w, idx = launched(name, moe.topk_gating_softmax, x, k)
    x64 = f64(x)
    check_topk(w, idx, x64, k, lambda i: softmax64(np.take_along_axis(x64.reshape(-1, D), i, -1)), "desc")


@pytest.mark.parametrize("D,k,name,order,norm", [(24, 4, "kk_topk_softmax_bias_simd", "desc", True),
                                                 (20, 3, "kk_topk_softmax_bias_simd", "desc", False),
                                                 (50, 6, "kk_topk_softmax_bias_dsimd", "asc", False),
                                                 (64, 8, "kk_topk_softmax_bias_dsimd", "asc", True),
                                                 (300, 5, "kk_topk_softmax_bias_D", "desc", True),
                                                 (300, 2, "kk_topk_softmax_bias_D", "desc", False)])
def test_topk_gating_softmax_with_bias(rng, D, k, name, order, norm):
    x = arr(rng, 3, 5, D, scale=2.0)
    bias = arr(rng, D, scale=0.05)
    w, idx = launched(name, moe.topk_gating_softmax, x, k, expert_bias=bias, norm_topk_prob=norm)
    scores = softmax64(f64(x)) + f64(bias)

    def weights_of(i):
        v = np.take_along_axis(scores.reshape(-1, D), i, -1)
        return v / v.sum(-1, keepdims=True) if norm else v

    check_topk(w, idx, scores, k, weights_of, order)


@pytest.mark.parametrize("D,k", [(60, 4), (37, 6), (128, 16)])
def test_router_argpartition_logits_topk(rng, D, k):
    x = arr(rng, 4, 3, D, scale=2.0)
    w, idx = launched("kk_router_argpartition_logits_topk", moe.router_argpartition_logits_topk, x, k=k)
    x64 = f64(x)
    # The indices are MLX's argpartition's, in its order; the weights a softmax over them.
    assert np.array_equal(np.array(idx), np.array(mx.argpartition(x, kth=-k, axis=-1)[..., -k:]).astype(np.uint32))
    check_topk(w, idx, x64, k, lambda i: softmax64(np.take_along_axis(x64.reshape(-1, D), i, -1)), None)


@pytest.mark.parametrize("D,n_group,topk_group", [(256, 8, 4), (256, 1, 1), (384, 1, 1), (384, 4, 2)])
def test_deepseek_router_topk_sigmoid(rng, D, n_group, topk_group):
    logits = arr(rng, 2, 3, D, scale=2.0)
    bias = mx.array(rng.uniform(0, 0.1, D).astype(np.float32))
    w, idx = launched("kk_deepseek_router_topk_sigmoid", moe.deepseek_router_topk_sigmoid, logits, bias,
                      n_group=n_group, topk_group=topk_group)
    aff, scores = deepseek_scores(f64(logits).reshape(-1, D), f64(bias), n_group, topk_group)

    def weights_of(i):
        a = np.take_along_axis(aff, i, -1)
        return a / a.sum(-1, keepdims=True)

    check_topk(w, idx, scores.reshape(2, 3, D), 8, weights_of, "desc")


# ---------------------------------------------------------------------------
# moe: dispatch and combine
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [mx.float32, mx.bfloat16])
@pytest.mark.parametrize("D", [40, 300])
def test_moe_dispatch(rng, dtype, D):
    x = arr(rng, 2, 3, D, dtype=dtype)
    idx = mx.array(rng.integers(0, 8, (2, 3, 4)).astype(np.uint32))
    got = launched("kk_moe_dispatch", moe.moe_dispatch, x, idx)
    assert got.dtype == dtype and got.shape == (2, 3, 4, D)
    assert np.array_equal(f64(got), np.broadcast_to(f64(x)[..., None, :], (2, 3, 4, D)))


# 300: a partial last threadgroup of 256.
@pytest.mark.parametrize("D,dtype", [(40, mx.float16), (300, mx.float32), (300, mx.bfloat16)])
def test_moe_combine(rng, dtype, D):
    e = arr(rng, 2, 3, 4, D, dtype=dtype)
    w = mx.softmax(arr(rng, 2, 3, 4), axis=-1).astype(dtype)
    want = (f64(e) * f64(w)[..., None]).sum(-2)
    close(launched("kk_moe_combine_D", moe.moe_combine, e, w), want, dtype)
    close(launched("kk_moe_combine_no_fma", moe.moe_combine_no_fma, e, w), want, dtype)
    # The exact variant rounds each product and each partial sum to the dtype, as MLX's ops do:
    exact = launched("kk_moe_combine_exact", moe.moe_combine_exact, e, w)
    acc = mx.zeros(e.shape[:-2] + (D,), dtype=dtype)
    for i in range(4):
        acc = acc + e[..., i, :] * w[..., i, None]
    close(exact, f64(acc), dtype, tol=TOL[dtype] / 2)
    close(exact, want, dtype, tol=4 * TOL[dtype])


# Row tiles: 32 threads for 40, 256 for 300 (one pass), 256 unrolled 4 times for 1100.
@pytest.mark.parametrize("D,edtype", [(40, mx.bfloat16), (300, mx.float32), (1100, mx.float16)])
def test_moe_combine_fp32_variants(rng, edtype, D):
    e = arr(rng, 5, 4, D, dtype=edtype)
    w = mx.softmax(arr(rng, 5, 4), axis=-1)
    want = (f64(e) * f64(w)[..., None]).sum(-2)
    close(launched("kk_moe_combine_fp32_D", moe.moe_combine_fp32, e, w), want, mx.float32)
    close(launched("kk_moe_combine_fp32_no_fma_D", moe.moe_combine_fp32_no_fma, e, w), want, mx.float32)
    close(launched("kk_moe_combine_fp32_no_fma_row_tile", moe.moe_combine_fp32_no_fma_row_tile, e, w), want,
          mx.float32)
    # MLX's promotion: experts * float32 weights, summed in float32.
    close(moe.moe_combine_fp32(e, w), f64((e * w[..., None]).sum(-2)), mx.float32)
    # The weighted sum specialised for K = 8, and its fallback for K = 4.
    e8, w8 = arr(rng, 3, 8, D, dtype=edtype), mx.softmax(arr(rng, 3, 8), axis=-1)
    close(launched("kk_moe_combine_weighted_sum_fp32_no_fma_k8", moe.moe_combine_weighted_sum_fp32_no_fma, e8, w8),
          (f64(e8) * f64(w8)[..., None]).sum(-2), mx.float32)
    close(launched("kk_moe_combine_fp32_no_fma_D", moe.moe_combine_weighted_sum_fp32_no_fma, e, w), want, mx.float32)


def gather_ref(act, W, gate, idx):
    Wi = f64(W)[np.array(idx).astype(np.int64)]  # (B, K, Din, Dout)
    return np.einsum("bk,bki,bkio->bo", f64(gate), f64(act), Wi)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16])
@pytest.mark.parametrize("no_fma", [False, True])
def test_gather_qmm_combine_dense(rng, dtype, no_fma):
    B, K, E, Din, Dout = 3, 4, 6, 48, 300
    act, W, gate, idx = gather_setup(rng, B, K, E, Din, Dout, dtype)
    want = gather_ref(act, W, gate, idx)
    # Float32 products of rounded inputs, then the dtype's rounding of each partial sum.
    tol = 2e-5 if dtype == mx.float32 else 5e-3
    acc = "kk_weighted_accumulate_" + ("fp32_" if dtype == mx.float32 else "") + ("no_fma_" if no_fma else "") + "D"
    got = launched(acc, moe.gather_qmm_combine, act, W, gate, idx, streaming=True, no_fma=no_fma)
    close(got, want, dtype, tol=tol)
    # Float32 output from float16 inputs takes the float32 accumulator.
    if dtype != mx.float32:
        got = launched("kk_weighted_accumulate_fp32_", moe.gather_qmm_combine, act, W, gate, idx, streaming=True,
                       no_fma=no_fma, output_dtype=mx.float32)
        close(got, want, mx.float32, tol=tol)
    # The vectorized path's mx.gather_mm runs float32 only on MLX's CPU: float32
    # projections, combined in the float32 or the output dtype's kernel.
    comb = "kk_moe_combine_" + ("fp32_" if dtype == mx.float32 else "") + ("no_fma_" if no_fma else "") + "D"
    a32, W32, g32 = act.astype(mx.float32), W.astype(mx.float32), gate.astype(mx.float32)
    got = launched(comb, moe.gather_qmm_combine, a32, W32, g32, idx, no_fma=no_fma, vectorized_k=True,
                   output_dtype=dtype)
    close(got, want, dtype, tol=tol)
    got = launched(comb, moe.gather_mmk_combine, a32, W32, g32, idx, no_fma=no_fma, output_dtype=dtype)
    close(got, want, dtype, tol=tol)


@pytest.mark.parametrize("bits_,gs", [(4, 64), (8, 32)])
def test_gather_qmm_combine_quantized(rng, bits_, gs):
    B, K, E, Din, Dout = 2, 3, 5, 128, 72
    act = arr(rng, B, K, Din)
    Wq, S, Bq = mx.quantize(arr(rng, E, Dout, Din, scale=0.1), group_size=gs, bits=bits_)
    gate = mx.softmax(arr(rng, B, K), axis=-1)
    idx = mx.array(np.stack([rng.choice(E, K, replace=False) for _ in range(B)]).astype(np.uint32))
    Wd = f64(mx.dequantize(Wq, S, Bq, group_size=gs, bits=bits_))  # (E, Dout, Din)
    want = np.einsum("bk,bki,bkoi->bo", f64(gate), f64(act), Wd[np.array(idx).astype(np.int64)])
    for no_fma in (False, True):
        got = launched("kk_weighted_accumulate_fp32_", moe.gather_qmm_combine_quantized, act, Wq, S, Bq, gate, idx,
                       group_size=gs, bits=bits_, streaming=True, no_fma=no_fma)
        close(got, want, tol=1e-4)
        got = launched("kk_moe_combine_fp32_", moe.gather_qmmk_combine_quantized, act, Wq, S, Bq, gate, idx,
                       group_size=gs, bits=bits_, no_fma=no_fma)
        close(got, want, tol=1e-4)
