"""Shared test set-up.

Every test runs on the device named by ALLOY_TEST_DEVICE (cpu by default;
scripts/gpu_check.sh runs the whole suite again with gpu). Random inputs are
fresh on each run; the seed is printed so a failure can be replayed with
ALLOY_TEST_SEED.
"""
import os
import pathlib
import random
import sys

import numpy as np
import pytest

DEVICE = os.environ.get("ALLOY_TEST_DEVICE", "cpu")
# Every metal_kernel a CPU run compiles is also compiled for CUDA (sm_90) with
# NVRTC, so CI without a GPU catches CUDA translation regressions.
os.environ.setdefault("ALLOY_CHECK_CUDA", "1")
# Every metal_kernel of the suite is bounds-checked unless it says otherwise,
# so a test kernel that strays out of its buffers fails naming the access.
os.environ.setdefault("ALLOY_BOUNDS_CHECK", "1")


import alloy.core as mx  # noqa: E402  (after ALLOY_CHECK_CUDA is set)

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "pyshared"))
from shared_fixtures import rng  # noqa: E402,F401  (the fixture, for every test here)


def pytest_configure(config):
    if DEVICE == "gpu":
        mx.set_default_device(mx.gpu)
    else:
        mx.set_default_device(mx.cpu)


@pytest.fixture(autouse=True)
def default_device_restored():
    """A test that changes the default device does not change it for the next."""
    yield
    mx.set_default_device(mx.gpu if DEVICE == "gpu" else mx.cpu)


def pytest_report_header(config):
    return f"alloy device: {DEVICE}, default_device={mx.default_device()}"





def tolerance(dtype):
    """(rtol, atol) for comparing a result of `dtype` with a float64 reference."""
    name = str(dtype).split(".")[-1]
    return {
        "float16": (2e-3, 2e-3),
        "bfloat16": (1.6e-2, 1.6e-2),
        "float32": (1e-5, 1e-6),
        "float64": (1e-12, 1e-12),
        "complex64": (1e-5, 1e-6),
    }.get(name, (0, 0))
