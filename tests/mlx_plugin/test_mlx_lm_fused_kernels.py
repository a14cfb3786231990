"""mlx-lm's fused Metal kernels (mlx_lm/kernels/, which muse_spark calls on
every device) and BitNet's packed ternary matmuls (mlx-lm's and mlx-vlm's), imported unchanged on real
MLX with alloy.mlx, on fresh random inputs against float64 references (tests/pyshared/mlx_lm_fused_kernels.py;
tests/python runs the same cases on Alloy's own path)."""
import importlib

import pytest

import mlx.core as mx

import alloy.mlx
from mlx_lm_fused_kernels import CASES, MODULES, check
from real_mlx_code import enter_package

# The kernel files import unchanged; the packages' __init__s do not run.
enter_package("mlx_lm")
enter_package("mlx_vlm")


@pytest.fixture(scope="module")
def kernels():
    mods = {name: importlib.import_module(module) for name, module in MODULES.items()}
    # Built at import with alloy.mlx installed: Alloy's kernels, not MLX's
    # "No Metal back-end" stub.
    for mod in mods.values():
        built = [v for k, v in vars(mod).items() if k.startswith("_") and k.endswith("_kernel")]
        assert built and all(isinstance(k, alloy.mlx._ext.MetalKernel) for k in built), mod.__name__
    return mods


@pytest.mark.parametrize("case_id,case,kwargs", CASES, ids=[c[0] for c in CASES])
def test_fused_kernel_matches_float64_reference(kernels, rng, case_id, case, kwargs):
    check(case, kwargs, kernels, mx, rng)
