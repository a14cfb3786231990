"""mlx-mfa's Conv3D (Metal 4 tensors and MPP matmul2d in metal_kernel
bodies) and its TurboQuant paged decode (dequantizing and gathering kernels,
then MLX's SDPA) on real MLX with alloy.mlx, the files unchanged (loaded by
tests/pyshared/real_mlx_code.py; scripts/install_mlx_mfa_sources.sh puts the
package's Python files in place). Against float64 numpy on the same rounded
inputs."""
import numpy as np
import pytest

import mlx.core as mx

from real_mlx_code import load
from references64 import check_tq_decode, conv3d64


@pytest.fixture(scope="module")
def conv_nax():
    return load("mlx_mfa.conv_nax", "mlx")


@pytest.mark.parametrize("k,padding,pairs", [((3, 3, 3), (1, 1, 1), ((1, 1), (1, 1), (1, 1))),
                                             ((1, 1, 1), (0, 0, 0), ((0, 0), (0, 0), (0, 0)))],
                         ids=["3x3x3", "1x1x1"])
def test_conv3d_through_matmul2d(rng, conv_nax, k, padding, pairs):
    B, T, H, W, C, O = 1, 3, 5, 6, 24, 40
    x = (0.5 * rng.standard_normal((B, T, H, W, C))).astype(np.float16)
    w = (rng.standard_normal((O, *k, C)) / np.sqrt(C * np.prod(k))).astype(np.float16)
    y = conv_nax._conv3d_nax_forward_python_legacy(mx.array(x), mx.array(w), padding=padding)
    assert y.dtype == mx.float16
    got = np.array(y.astype(mx.float32)).astype(np.float64)
    np.testing.assert_allclose(got, conv3d64(x, w, pairs), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("bits", [2, 3, 4])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_turboquant_paged_decode(rng, bits, dtype):
    check_tq_decode(load("mlx_mfa.tq_decode", "mlx"), mx, rng, bits, dtype)
