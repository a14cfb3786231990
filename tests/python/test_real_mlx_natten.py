"""natten-mlx 0.3.3 (neighborhood attention, 1D/2D/3D) on Alloy, its files
unchanged (loaded by tests/pyshared/real_mlx_code.py with their imports
pointed at Alloy; the package's __init__, which refuses any platform but
macOS, does not run): the Metal backend's fused forward kernels (scalar,
float4, SIMD-group and causal forms, stride, dilation, GQA), their backward
kernels under mx.grad, the split QK/AV kernels and the variable-length
kernels, and extras.allin1's QK+RPB and AV kernels and their backward kernels, against float64 numpy, the package's pure backend on Alloy, and the
same pure backend on real MLX. The checks are
tests/pyshared/natten_checks.py's, shared with alloy.mlx's suite."""
import numpy as np
import pytest

import mlx.core as real_mx

import alloy.core as ax
import natten_checks as nc
from real_mlx_code import load


@pytest.fixture(scope="module")
def natten():
    return nc.prepare(load("natten_mlx.functional", "alloy", kernels=True))


@pytest.fixture(scope="module")
def natten_on_mlx():
    functional = load("natten_mlx.functional", "mlx")
    functional.__port_loader__.loaded["natten_mlx._core.ops"].set_backend("pure")
    return functional



@pytest.mark.parametrize("name", list(nc.CASES))
def test_forward(rng, natten, natten_on_mlx, name):
    F, ops, launched = natten
    start = len(launched)
    (q, k, v), args, got = nc.forward_matches(F, ops, ax, rng, name, "float32")
    nc.assert_launched(launched, start, "simd" if "simd" in name else "fused")
    rank = len(nc.CASES[name][0])
    theirs = getattr(natten_on_mlx, f"na{rank}d")(*(real_mx.array(np.array(x)) for x in (q, k, v)), **args)
    np.testing.assert_allclose(got, np.array(theirs), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", nc.LOW_PRECISION_CASES)
def test_forward_low_precision(rng, natten, name, dtype):
    F, ops, launched = natten
    start = len(launched)
    nc.forward_matches(F, ops, ax, rng, name, dtype)
    nc.assert_launched(launched, start, "fused")


@pytest.mark.parametrize("name", nc.GRADIENT_CASES)
def test_gradients(rng, natten, name):
    F, ops, launched = natten
    start = len(launched)
    nc.gradients_match(F, ops, ax, rng, name)
    nc.assert_launched(launched, start, "bwd")


@pytest.mark.parametrize("name", nc.SPLIT_CASES)
def test_split_qk_av(rng, natten, name):
    F, ops, launched = natten
    start = len(launched)
    nc.split_ops_match(F, ops, ax, rng, name)
    nc.assert_launched(launched, start, "_qk")
    nc.assert_launched(launched, start, "_av")


def test_varlen_1d(rng, natten):
    F, ops, launched = natten
    start = len(launched)
    nc.varlen_1d_matches(F, ops, ax, rng)
    nc.assert_launched(launched, start, "varlen")


@pytest.fixture(scope="module")
def allin1():
    return nc.prepare_allin1(load("natten_mlx.extras.allin1", "alloy", kernels=True))


@pytest.mark.parametrize("rank,kernel,dilation,dim", nc.ALLIN1_CASES)
def test_allin1_qk_rpb_and_av(rng, allin1, rank, kernel, dilation, dim):
    """extras.allin1 (the classic NATTEN ops of DiNAT models): fused QK plus
    relative position bias, and AV."""
    module, launched = allin1
    start = len(launched)
    nc.rpb_ops_match(module, ax, rng, rank, kernel, dilation, dim)
    nc.assert_launched(launched, start, "")


@pytest.mark.parametrize("rank,kernel,dilation,dim", nc.ALLIN1_BACKWARD_CASES)
def test_allin1_backward(rng, allin1, rank, kernel, dilation, dim):
    """extras.allin1's backward kernels: dq, dk and the bias gradient of
    QK+RPB, d_attn and d_value of AV."""
    module, launched = allin1
    start = len(launched)
    fm = module.__port_loader__.loaded["natten_mlx.extras.allin1.functional_metal"]
    nc.rpb_backward_matches(fm, ax, rng, rank, kernel, dilation, dim)
    nc.assert_launched(launched, start, "")
