"""natten-mlx 0.3.3 (neighborhood attention) on real MLX with alloy.mlx, its
files unchanged (loaded by tests/pyshared/real_mlx_code.py; the package's
__init__ refuses any platform but macOS, its modules do not): the Metal
backend's forward, backward, split and variable-length kernels, and
extras.allin1's QK+RPB and AV kernels and their backward kernels, against float64 and the package's
pure-MLX backend. The checks are
tests/pyshared/natten_checks.py's, shared with Alloy's own suite."""
import pytest

import mlx.core as mx

import natten_checks as nc
from real_mlx_code import load


@pytest.fixture(scope="module")
def natten():
    return nc.prepare(load("natten_mlx.functional", "mlx"))



@pytest.mark.parametrize("name", list(nc.CASES))
def test_forward(rng, natten, name):
    F, ops, launched = natten
    start = len(launched)
    nc.forward_matches(F, ops, mx, rng, name, "float32")
    nc.assert_launched(launched, start, "simd" if "simd" in name else "fused")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", nc.LOW_PRECISION_CASES)
def test_forward_low_precision(rng, natten, name, dtype):
    F, ops, launched = natten
    start = len(launched)
    nc.forward_matches(F, ops, mx, rng, name, dtype)
    nc.assert_launched(launched, start, "fused")


@pytest.mark.parametrize("name", nc.GRADIENT_CASES)
def test_gradients(rng, natten, name):
    F, ops, launched = natten
    start = len(launched)
    nc.gradients_match(F, ops, mx, rng, name)
    nc.assert_launched(launched, start, "bwd")


@pytest.mark.parametrize("name", nc.SPLIT_CASES)
def test_split_qk_av(rng, natten, name):
    F, ops, launched = natten
    start = len(launched)
    nc.split_ops_match(F, ops, mx, rng, name)
    nc.assert_launched(launched, start, "_qk")
    nc.assert_launched(launched, start, "_av")


def test_varlen_1d(rng, natten):
    F, ops, launched = natten
    start = len(launched)
    nc.varlen_1d_matches(F, ops, mx, rng)
    nc.assert_launched(launched, start, "varlen")


@pytest.fixture(scope="module")
def allin1():
    return nc.prepare_allin1(load("natten_mlx.extras.allin1", "mlx"))


@pytest.mark.parametrize("rank,kernel,dilation,dim", nc.ALLIN1_CASES)
def test_allin1_qk_rpb_and_av(rng, allin1, rank, kernel, dilation, dim):
    module, launched = allin1
    start = len(launched)
    nc.rpb_ops_match(module, mx, rng, rank, kernel, dilation, dim)
    nc.assert_launched(launched, start, "")


@pytest.mark.parametrize("rank,kernel,dilation,dim", nc.ALLIN1_BACKWARD_CASES)
def test_allin1_backward(rng, allin1, rank, kernel, dilation, dim):
    module, launched = allin1
    start = len(launched)
    fm = module.__port_loader__.loaded["natten_mlx.extras.allin1.functional_metal"]
    nc.rpb_backward_matches(fm, mx, rng, rank, kernel, dilation, dim)
    nc.assert_launched(launched, start, "")
