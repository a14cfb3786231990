"""mlx-vlm's Metal kernels on real MLX with alloy.mlx, the files unchanged
(loaded by tests/pyshared/real_mlx_code.py, which stands in only for the
package's generation and visualisation modules these functions never reach).

Nemotron-Labs diffusion's linear layers: `_bm32_linear` builds its kernel on
MLX's own steel GEMM (`GEMMKernel`, its loaders and simdgroup MMA), whose
header the file reads from the installed mlx package
(Path(mx.__file__).parent / "include"), and `_small_row_linear` is a GEMV over
a few rows with simd_shuffle_down reductions. Both against float64 numpy on
the same bfloat16 / float16 inputs."""
import numpy as np
import pytest

import mlx.core as mx

from real_mlx_code import MLX_VLM_DIFFUSION_STAND_INS, load

NEMOTRON = "mlx_vlm.models.nemotron_labs_diffusion.language"


@pytest.fixture(scope="module")
def nemotron():
    try:
        import PIL  # noqa: F401
    except ImportError:
        pytest.fail("mlx-vlm's models/base.py imports Pillow: pip install pillow (make test does)", pytrace=False)
    m = load(NEMOTRON, "mlx", substitutes=MLX_VLM_DIFFUSION_STAND_INS)
    assert m._HAS_METAL and m._BM32_LINEAR_KERNEL is not None, "alloy.mlx should make the kernel path available"
    return m


def linear_and_input(m, rng, K, O, rows, dtype):
    lin = m.nn.Linear(K, O)
    lin.weight = mx.array((rng.standard_normal((O, K)) * K**-0.5).astype(np.float32)).astype(dtype)
    lin.bias = mx.array(rng.standard_normal(O).astype(np.float32)).astype(dtype)
    x = mx.array(rng.standard_normal((1, rows, K)).astype(np.float32)).astype(dtype)
    as64 = lambda a: np.array(a.astype(mx.float32)).astype(np.float64)  # noqa: E731
    want = as64(x) @ as64(lin.weight).T + as64(lin.bias)
    return lin, x, want


def test_nemotron_bm32_steel_gemm_linear(nemotron, rng):
    """32 rows, 64 outputs a threadgroup, K in steps of 16: MLX's steel GEMM."""
    lin, x, want = linear_and_input(nemotron, rng, K=96, O=192, rows=32, dtype=mx.bfloat16)
    out = nemotron._bm32_linear(lin, x)
    assert out is not None and out.dtype == mx.bfloat16 and out.shape == (1, 32, 192)
    # bfloat16 output (8 bits of mantissa), bias added in bfloat16.
    np.testing.assert_allclose(np.array(out.astype(mx.float32)), want, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("dtype,K", [(mx.float16, 100), (mx.bfloat16, 64)])
def test_nemotron_small_row_gemv_linear(nemotron, rng, dtype, K):
    """A few rows (5) of a linear layer as GEMVs, K not a multiple of the
    block (100) reaching the leftover path."""
    lin, x, want = linear_and_input(nemotron, rng, K=K, O=48, rows=5, dtype=dtype)
    out = nemotron._small_row_linear(lin, x, 8)
    assert out is not None and out.shape == (1, 5, 48)
    tol = 2e-2 if dtype == mx.bfloat16 else 3e-3
    np.testing.assert_allclose(np.array(out.astype(mx.float32)), want, rtol=tol, atol=tol)
