"""demucs-mlx 1.6.1's fused Metal kernels on Alloy, its file unchanged
(loaded by tests/pyshared/real_mlx_code.py): each function three ways (Alloy
with its kernels, Alloy and real MLX on the file's composed ops) and against
float64 (tests/pyshared/demucs_checks.py, shared with alloy.mlx's suite)."""
import numpy as np
import pytest

from demucs_checks import CASES, check_against_float64
from real_mlx_code import assert_agree, run_three

MODULE = "demucs_mlx.metal_kernels"


@pytest.mark.parametrize("name", list(CASES))
def test_kernel_matches_its_fallback_and_float64(rng, name):
    make_inputs, call, reference = CASES[name]
    inputs = make_inputs(rng)

    def run(module, _):
        return [call(module, module.__dict__["mx"], inputs)]

    results = run_three(MODULE, run, inputs)
    assert results["kernels launched"], results["kernels launched"]
    check_against_float64(results["kernel"][0], inputs, reference)
    # Against each fallback within 2e-6 plus that fallback's own distance
    # from float64: MLX's composed group norm strays by up to 5e-6 where
    # the kernel stays within 7e-7 (ALLOY_TEST_SEED=3238783475).
    want64 = reference(inputs)
    for fallback in ("alloy_ops", "mlx_ops"):
        own = float(np.max(np.abs(np.asarray(results[fallback][0], np.float64) - want64)))
        assert_agree({"kernel": results["kernel"], fallback: results[fallback]}, [name], rtol=1e-5,
                     atol=2e-6 + own, fallbacks=(fallback,))
