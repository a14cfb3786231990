"""mhc-mlx 0.6.3's MHCLayer on real MLX with alloy.mlx, its files unchanged
(loaded by tests/pyshared/real_mlx_code.py): the Metal path (Sinkhorn
forward and backward, the fused or split forward, the split backward's six
kernels) against the layer's reference ops and float64 numpy; the checks are
tests/pyshared/mhc_checks.py's, shared with Alloy's own suite.

On MLX's CPU backend the buffers start 8 bytes past a 16-byte boundary (a
size header before the data), and the kernels' `*(const device float4*)`
casts faulted there until alloy.mlx aligned such kernels' buffers."""
import pytest

import mlx.core as mx

from mhc_checks import SHAPES, check_layer
from real_mlx_code import load


@pytest.mark.parametrize("shape", list(SHAPES))
def test_mhc_layer_metal_path(rng, shape):
    layer = load("mhc_mlx.layer", "mlx")
    metal = layer.__port_loader__.loaded["mhc_mlx.metal"]
    check_layer(layer, metal, mx, rng, SHAPES[shape])
