"""demucs-mlx 1.6.1's fused Metal kernels on real MLX with alloy.mlx, the
file imported as it is: with the plugin, `mx.metal.is_available()` answers
true, so the file takes its kernels (HAS_METAL) on MLX's CPU and CUDA
backends; each function against float64 and the file's composed ops
(tests/pyshared/demucs_checks.py, shared with Alloy's own suite)."""
import numpy as np
import pytest

import mlx.core as mx

from demucs_checks import CASES, RTOL, ATOL, check_against_float64
from real_mlx_code import enter_package


@pytest.fixture(scope="module")
def demucs():
    enter_package("demucs_mlx")
    import demucs_mlx.metal_kernels as module
    return module


@pytest.mark.parametrize("name", list(CASES))
def test_kernel_matches_float64_and_the_files_ops(rng, demucs, monkeypatch, name):
    assert demucs.HAS_METAL, "alloy.mlx is installed: the file should take its Metal kernels"
    make_inputs, call, reference = CASES[name]
    inputs = make_inputs(rng)
    launched = []
    real_metal_kernel = mx.fast.metal_kernel

    def counting(*args, **kwargs):
        kernel = real_metal_kernel(*args, **kwargs)
        return lambda *a, **kw: (launched.append(kwargs.get("name")), kernel(*a, **kw))[1]

    # The file builds each kernel once, at its first call: start each test from none.
    # (monkeypatch puts the file's caches back as they were after the test).
    for cached in [n for n in vars(demucs) if n.endswith("_kernel") and not n.startswith("_get_")]:
        monkeypatch.setattr(demucs, cached, None)
    monkeypatch.setattr(mx.fast, "metal_kernel", counting)
    got = np.array(call(demucs, mx, inputs))
    assert launched, "no Metal kernel ran"
    check_against_float64(got, inputs, reference)
    monkeypatch.setattr(demucs, "HAS_METAL", False)
    ops = np.array(call(demucs, mx, inputs))
    # Within the ops' own distance from float64 too: MLX's composed group
    # norm strays by up to 5e-6 where the kernel stays within 7e-7.
    own = float(np.max(np.abs(ops.astype(np.float64) - reference(inputs))))
    np.testing.assert_allclose(got, ops, rtol=RTOL, atol=ATOL * max(1.0, np.abs(ops).max()) + own)
