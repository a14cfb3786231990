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


def test_the_fused_backward_kernels_race_is_named_by_the_race_check(rng, monkeypatch):
    """`fused_backward=True`'s dx kernel (mhc_checks.py's docstring): with
    ALLOY_RACE_CHECK=1 the launch names the race instead of returning a dx
    that is wrong on the CPU."""
    monkeypatch.setenv("ALLOY_RACE_CHECK", "1")
    metal = load("mhc_mlx.metal", "alloy", kernels=True)
    B, n, C = 1, 4, 256  # one group: with several, the workers race to report first
    arrays = [ax.array(rng.standard_normal(s).astype("float32")) for s in [(B, n, C), (n, n), (n,), (n,), (C,)]]
    d_out = ax.array(rng.standard_normal((B, n, C)).astype("float32"))
    with ax.stream(ax.cpu), pytest.raises(RuntimeError) as e:
        ax.eval(metal.mhc_backward_fused_dx_metal(*arrays, d_out))
    msg = str(e.value)
    assert "kernel 'mhc_backward_fused_dx_" in msg and "race on 'reduce_buf' element 0" in msg, msg
    assert "thread (0, 0, 0) wrote it" in msg and "\n    reduce_buf[lane] = local_dr;" in msg, msg
    assert "thread (1, 0, 0) read it" in msg and "\n    float mean_sq = reduce_buf[0] / float(C);" in msg, msg
