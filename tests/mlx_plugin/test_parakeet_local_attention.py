"""parakeet-mlx's local relative-position attention kernels on real MLX with
alloy.mlx, the file unchanged (loaded by tests/pyshared/real_mlx_code.py).
The file has no fallback: on MLX without Metal it cannot run at all. Each
kernel against float64 numpy written from its math."""
import numpy as np
import pytest

import mlx.core as mx

from references64 import band_pv64, band_qk64
from real_mlx_code import load


@pytest.fixture(scope="module")
def parakeet():
    return load("parakeet_mlx.attention", "mlx")


@pytest.mark.parametrize("D,w,Sq,Sk", [(128, 5, 12, 12), (64, 2, 7, 10), (20, 4, 6, 6)])
def test_parakeet_band_kernels(rng, parakeet, D, w, Sq, Sk):
    B, H = 2, 3
    q = rng.standard_normal((B, H, Sq, D)).astype(np.float32)
    k = rng.standard_normal((B, H, Sk, D)).astype(np.float32)
    attn = parakeet.RelPositionMultiHeadLocalAttention(H, H * D, context_size=(w, w))
    got = np.array(attn.matmul_qk(mx.array(q), mx.array(k), w))
    want = band_qk64(q.astype(np.float64), k.astype(np.float64), w)
    assert got.shape == want.shape
    assert np.array_equal(np.isinf(got), np.isinf(want))
    np.testing.assert_allclose(got[np.isfinite(want)], want[np.isfinite(want)], rtol=1e-5, atol=1e-5)

    p = rng.random((B, H, Sq, 2 * w + 1)).astype(np.float32)
    v = rng.standard_normal((B, H, Sk, D)).astype(np.float32)
    got = np.array(attn.matmul_pv(mx.array(p), mx.array(v), w))
    np.testing.assert_allclose(got, band_pv64(p.astype(np.float64), v.astype(np.float64), w), rtol=1e-5, atol=1e-5)
