"""demucs-mlx 1.6.1's fused Metal kernels on Alloy, its file unchanged
(loaded by tests/pyshared/real_mlx_code.py): each function three ways (Alloy
with its kernels, Alloy and real MLX on the file's composed ops) and against
float64 (tests/pyshared/demucs_checks.py, shared with alloy.mlx's suite)."""
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
    assert_agree(results, [name], rtol=1e-5, atol=2e-6)
    check_against_float64(results["kernel"][0], inputs, reference)
