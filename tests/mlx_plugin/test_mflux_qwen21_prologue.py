"""mflux's Qwen-Image 2.1 attention prologue on real MLX with alloy.mlx, the
file unchanged (loaded by tests/pyshared/real_mlx_code.py). The file builds
its `fused_qk_norm_rope` kernel only where `mx.metal.is_available()` and the
default device is the GPU, so on MLX's CPU backend it always takes its
composed ops and this test has nothing of the plugin's to check: it runs on
mlx-cuda (ALLOY_TEST_DEVICE=gpu, scripts/gpu_check.sh's mlx_plugin_gpu step).
There the kernel (its RoPE with FP_CONTRACT off, strided views of one fused
projection) is checked against the file's own composed ops, with
MFLUX_QWEN21_DISABLE_FUSED_PROLOGUE=1 as the file documents."""
import numpy as np
import pytest

import mlx.core as mx

from real_mlx_code import load

QWEN21 = "mflux.models.qwen21.model.qwen21_transformer.qwen21_attention"


@pytest.mark.skipif(not mx.cuda.is_available(),
                    reason="mflux takes its Metal kernel only when MLX's default device is a GPU")
@pytest.mark.parametrize("dtype,tol", [(mx.float32, 2e-5), (mx.bfloat16, 1.6e-2)])
def test_qwen21_fused_prologue_matches_composed_ops(rng, monkeypatch, dtype, tol):
    B, L, H, D = 2, 6, 2, 128
    dim = H * D
    m = load(QWEN21, "mlx")
    assert m.fused_qk_norm_rope_available(D), "alloy.mlx should make the kernel path available"
    weights = [mx.array((rng.standard_normal((dim, dim)) * dim ** -0.5).astype(np.float32)) for _ in range(3)]
    norms = [mx.array((1 + 0.2 * rng.standard_normal(D)).astype(np.float32)) for _ in range(2)]
    angles = rng.uniform(0, 2 * np.pi, (L, D // 2))
    cos, sin = mx.array(np.cos(angles).astype(np.float32)), mx.array(np.sin(angles).astype(np.float32))
    h = mx.array(rng.standard_normal((B, L, dim)).astype(np.float32)).astype(dtype)

    def project():
        a = m.Qwen21Attention(dim=dim, num_heads=H, head_dim=D)
        a.norm_q.weight, a.norm_k.weight = norms[0].astype(dtype), norms[1].astype(dtype)
        a._qkv_weight = mx.concatenate(weights, axis=0).astype(dtype)  # strided q, k views
        return a.use_fused_prologue, [np.array(t.astype(mx.float32)) for t in a._project(h, cos, sin)[:2]]

    fused, got = project()
    monkeypatch.setenv("MFLUX_QWEN21_DISABLE_FUSED_PROLOGUE", "1")
    composed, want = project()
    assert fused and not composed
    for name, g, w in zip("qk", got, want):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=name)
