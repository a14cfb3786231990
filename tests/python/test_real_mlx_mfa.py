"""mlx-mfa's Conv3D through Metal 4 tensors, loaded unchanged from its source
(scripts/install_mlx_mfa_sources.sh puts the package's Python files in
site-packages; its sdist builds only on macOS) with its imports pointed at
Alloy (real_mlx_code.py).

`conv_nax._conv3d_nax_forward_python_legacy` (the package's Python path,
behind `MFA_CONV_NAX_USE_PYTHON_LEGACY=1`) runs two metal_kernel bodies per
chunk: an im2col gather, and an implicit GEMM written with Metal 4 tensors
(`tensor<device half, dextents<int32_t, 2>, tensor_inline>` over the
buffers, `.slice<32, 32>`, MPP `matmul2d` with `execution_simdgroups<1>`,
a float destination cooperative tensor and `get_multidimensional_index`).
A 1x1x1 kernel takes a third kernel, the GEMM on the input itself. The file
has no fallback on the CPU: each result is checked against float64 numpy of
the convolution on the same float16 inputs, and against Alloy's own
`conv_general`.
"""
import numpy as np
import pytest

from real_mlx_code import load
from references64 import check_tq_decode, conv3d64

import alloy.core as ax


@pytest.fixture(scope="module")
def conv_nax():
    return load("mlx_mfa.conv_nax", "alloy", kernels=True)


CASES = {
    # B, T, H, W, C_in, C_out, kernel, padding as the file takes it, as pairs
    "3x3x3_same": (1, 3, 6, 6, 16, 24, (3, 3, 3), (1, 1, 1), ((1, 1), (1, 1), (1, 1))),
    "1x1x1_pointwise": (1, 2, 5, 7, 32, 16, (1, 1, 1), (0, 0, 0), ((0, 0), (0, 0), (0, 0))),
    # C_in 31: K is padded up to the GEMM's 32-wide tile; C_out 33 leaves a partial tile.
    "2x3x3_odd_channels": (2, 4, 4, 4, 31, 33, (2, 3, 3), (0, 1, 1), ((0, 0), (1, 1), (1, 1))),
    "1x3x3_valid": (1, 2, 9, 5, 8, 40, (1, 3, 3), (0, 0, 0), ((0, 0), (0, 0), (0, 0))),
}


@pytest.mark.parametrize("case", list(CASES))
def test_conv3d_through_matmul2d(rng, conv_nax, case):
    B, T, H, W, C, O, k, padding, pairs = CASES[case]
    x = (0.5 * rng.standard_normal((B, T, H, W, C))).astype(np.float16)
    w = (rng.standard_normal((O, *k, C)) / np.sqrt(C * np.prod(k))).astype(np.float16)
    y = conv_nax._conv3d_nax_forward_python_legacy(ax.array(x), ax.array(w), padding=padding)
    assert y.dtype == ax.float16
    got = np.array(y.astype(ax.float32)).astype(np.float64)
    want = conv3d64(x, w, pairs)
    assert got.shape == want.shape
    # float accumulation, then one rounding to half (2^-11 relative).
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)
    ours = np.array(ax.conv_general(ax.array(x).astype(ax.float32), ax.array(w).astype(ax.float32),
                                    padding=[p[0] for p in pairs]))
    np.testing.assert_allclose(got, ours, rtol=2e-3, atol=2e-3)
    launched = conv_nax.__port_loader__.kernels_launched()
    want_kernel = "conv3d_1x1x1_matmul2d_" if k == (1, 1, 1) else "conv3d_matmul2d_"
    assert any(n.startswith(want_kernel) for n in launched), launched


def test_conv3d_causal_time_padding(rng, conv_nax):
    """causal_pad_t: time padded (K_T - 1, 0), so no output sees a later frame."""
    B, T, H, W, C, O = 1, 5, 4, 4, 16, 16
    x = (0.5 * rng.standard_normal((B, T, H, W, C))).astype(np.float16)
    w = (rng.standard_normal((O, 3, 3, 3, C)) / np.sqrt(27 * C)).astype(np.float16)
    y = conv_nax._conv3d_nax_forward_python_legacy(ax.array(x), ax.array(w), padding=(1, 1, 1), causal_pad_t=True)
    got = np.array(y.astype(ax.float32)).astype(np.float64)
    np.testing.assert_allclose(got, conv3d64(x, w, ((2, 0), (1, 1), (1, 1))), rtol=2e-3, atol=2e-3)


def test_conv3d_rejects_bfloat16_as_the_file_does(rng, conv_nax):
    x = ax.array(rng.standard_normal((1, 2, 3, 3, 8)).astype(np.float32)).astype(ax.bfloat16)
    w = ax.array(rng.standard_normal((8, 1, 1, 1, 8)).astype(np.float32)).astype(ax.bfloat16)
    with pytest.raises(ValueError, match="fp16 only"):
        conv_nax._conv3d_nax_forward_python_legacy(x, w)


# --- attention.py: the per-row top-K threshold by bisection ------------------

@pytest.fixture(scope="module")
def mfa_attention():
    # The file imports its C++ extension's scatter under `except ImportError`.
    return load("mlx_mfa.attention", "alloy", kernels=True)


@pytest.mark.parametrize("S,K", [(100, 7), (1000, 64), (4096, 64)])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_topk_bisect_threshold(rng, mfa_attention, S, K, dtype):
    """`_topk_bisect_threshold_kernel` launched as flash_attention_topk does:
    a threadgroup of 256 threads a row (simd_max/min/sum, threadgroup arrays,
    32 rounds of barriers). Each row's threshold keeps at least K scores and
    none below the K-th largest score's level."""
    BH, N = 3, 5
    scores = rng.standard_normal((BH, N, S)).astype(np.float32)
    if dtype == "float16":  # ties, as the file's half scores have
        scores = scores.astype(np.float16).astype(np.float32)
    x = ax.array(scores).astype(getattr(ax, dtype))
    threshold = mfa_attention._topk_bisect_threshold_kernel(
        inputs=[x, ax.array([K], dtype=ax.int32)], output_shapes=[(BH, N)], output_dtypes=[ax.float32],
        grid=(N * 256, BH, 1), threadgroup=(256, 1, 1))[0]
    thr = np.array(threshold)
    levels = -np.sort(-scores, axis=-1)
    kth = levels[..., K - 1]
    below = np.where(levels < kth[..., None], levels, -np.inf).max(-1)  # the next lower level
    assert np.all((scores >= thr[..., None]).sum(-1) >= K)
    assert np.all(thr <= kth) and np.all(thr > below), (thr, kth, below)


@pytest.mark.parametrize("bits", [2, 3, 4])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_turboquant_paged_decode(rng, bits, dtype):
    """tq_decode.py: the K-dequant kernel (2-, 3- and 4-bit packed indices
    into a half codebook, per-token scales; `bfloat16_t` for a bfloat16
    cache) and the V-gather kernel over a block table, then SDPA."""
    check_tq_decode(load("mlx_mfa.tq_decode", "alloy", kernels=True), ax, rng, bits, dtype)
