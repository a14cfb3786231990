"""mhc-mlx 0.6.3's MHCLayer on Alloy, its files unchanged (loaded by
tests/pyshared/real_mlx_code.py with their imports pointed at Alloy): the
Metal path (16 of its 32 kernels: Sinkhorn forward and backward, the fully
fused or split forward in float32, bfloat16 and float16, the split backward)
against the layer's reference ops on Alloy and on real MLX, and float64
numpy. The checks are tests/pyshared/mhc_checks.py's, shared with alloy.mlx's
suite; its docstring names the two bugs of the package's kernels that decide
the shapes."""
import pytest

import mlx.core as real_mx

import alloy.core as ax
from mhc_checks import SHAPES, check_layer, run_layer
from real_mlx_code import load


@pytest.mark.parametrize("shape", list(SHAPES))
def test_mhc_layer_metal_path(rng, shape):
    layer = load("mhc_mlx.layer", "alloy", kernels=True)
    metal = layer.__port_loader__.loaded["mhc_mlx.metal"]
    mlx_layer = load("mhc_mlx.layer", "mlx")

    def real_mlx_reference(inputs, dtype):
        with real_mx.stream(real_mx.cpu):
            return run_layer(mlx_layer, real_mx, inputs, False, dtype)

    check_layer(layer, metal, ax, rng, SHAPES[shape], reference_runs=[("real MLX's reference ops", real_mlx_reference)])
