"""mlx-lm's fused Metal kernels (mlx_lm/kernels/: q/k norms with and without
RoPE, the norm and sigmoid gate, expert routing, norm-add-norm, the expert
combine) and BitNet's packed ternary matmul (models/bitlinear_layers.py), loaded unchanged from the installed package with their imports
pointed at Alloy (real_mlx_code.py), on fresh random inputs against float64
references (tests/pyshared/mlx_lm_fused_kernels.py). They have no ops
fallback: muse_spark and BitNet models call them on every device."""
import pytest

from mlx_lm_fused_kernels import CASES, MODULES, check
from real_mlx_code import load


@pytest.fixture(scope="module")
def kernels():
    """The six files as Alloy loads them, and the `mx` they see."""
    mods = {name: load(module, "alloy", kernels=True) for name, module in MODULES.items()}
    return mods, mods["qk_norm"].mx


@pytest.mark.parametrize("case_id,case,kwargs", CASES, ids=[c[0] for c in CASES])
def test_fused_kernel_matches_float64_reference(kernels, rng, case_id, case, kwargs):
    mods, mx = kernels
    before = sum(m.__port_loader__.launches() for m in mods.values())
    check(case, kwargs, mods, mx, rng)
    # The file's own metal_kernel ran (no fallback exists to take instead).
    assert sum(m.__port_loader__.launches() for m in mods.values()) > before
