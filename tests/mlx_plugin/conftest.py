"""Set-up of the alloy.mlx tests: real MLX with Alloy's metal_kernel.

They run on MLX's CPU backend (mlx[cpu], CI) or, with ALLOY_TEST_DEVICE=gpu,
on MLX's CUDA backend (mlx-cuda-13; scripts/gpu_check.sh). Random inputs are
fresh on each run; the seed is printed (replay with ALLOY_TEST_SEED).
"""
import os
import pathlib
import sys

import numpy as np
import pytest

DEVICE = os.environ.get("ALLOY_TEST_DEVICE", "cpu")
# Every kernel the CPU run compiles is also compiled for CUDA (sm_90) by NVRTC.
os.environ.setdefault("ALLOY_CHECK_CUDA", "1")
# MLX's CUDA matmuls round float32 operands to TF32 unless told not to; Alloy's
# use full float32 (unless asked). The tests compare kernel paths, so both
# frameworks' matmuls run in float32 (muse_spark's logits differed by 0.57%
# of their largest with TF32, seed 3831036211).
os.environ.setdefault("MLX_ENABLE_TF32", "0")

import mlx.core as mx  # noqa: E402

import alloy.mlx  # noqa: E402,F401  (before any module that builds kernels at import)

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "pyshared"))
from shared_fixtures import rng  # noqa: E402,F401  (the fixture, for every test here)


def pytest_configure(config):
    if DEVICE == "gpu":
        assert mx.cuda.is_available(), "ALLOY_TEST_DEVICE=gpu needs MLX with its CUDA backend (mlx-cuda-13)"
        mx.set_default_device(mx.gpu)


def pytest_report_header(config):
    return f"mlx {mx.__version__}, default device {mx.default_device()}, alloy.mlx installed: {alloy.mlx.installed()}"


@pytest.fixture
def plugin():
    """alloy.mlx installed for the test, and again after it whatever it did."""
    alloy.mlx.install()
    yield alloy.mlx
    alloy.mlx.install()
