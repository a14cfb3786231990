"""parakeet-mlx's local relative-position attention kernels on real MLX with
alloy.mlx, the file unchanged (loaded by tests/pyshared/real_mlx_code.py).
The file has no fallback: on MLX without Metal it cannot run at all. Each
kernel against float64 numpy written from its math."""
import pytest

import mlx.core as mx

from references64 import check_band_kernels
from real_mlx_code import load


@pytest.fixture(scope="module")
def parakeet():
    return load("parakeet_mlx.attention", "mlx")


@pytest.mark.parametrize("D,w,Sq,Sk", [(128, 5, 12, 12), (64, 2, 7, 10), (20, 4, 6, 6)])
def test_parakeet_band_kernels(rng, parakeet, D, w, Sq, Sk):
    check_band_kernels(parakeet, mx.array, rng, D, w, Sq, Sk)
