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


def _ran(launched, start, part):
    names = launched[start:]
    assert names and all("natten" in n for n in names), names
    assert any(part in n for n in names), (part, names)


@pytest.mark.parametrize("name", list(nc.CASES))
def test_forward(rng, natten, name):
    F, ops, launched = natten
    start = len(launched)
    nc.forward_matches(F, ops, mx, rng, name, "float32")
    _ran(launched, start, "simd" if "simd" in name else "fused")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["1d_vec4", "2d_causal_rows", "3d_vec4"])
def test_forward_low_precision(rng, natten, name, dtype):
    F, ops, launched = natten
    start = len(launched)
    nc.forward_matches(F, ops, mx, rng, name, dtype)
    _ran(launched, start, "fused")


@pytest.mark.parametrize("name", ["1d_scalar_stride_dilation", "1d_causal", "1d_simd", "1d_gqa", "2d_vec4",
                                  "2d_scalar_stride_dilation", "2d_simd", "3d_causal_depth", "3d_simd"])
def test_gradients(rng, natten, name):
    F, ops, launched = natten
    start = len(launched)
    nc.gradients_match(F, ops, mx, rng, name)
    _ran(launched, start, "bwd")


@pytest.mark.parametrize("name", ["1d_vec4", "2d_scalar_stride_dilation", "3d_vec4"])
def test_split_qk_av(rng, natten, name):
    F, ops, launched = natten
    start = len(launched)
    nc.split_ops_match(F, ops, mx, rng, name)
    _ran(launched, start, "_qk")
    _ran(launched, start, "_av")


def test_varlen_1d(rng, natten):
    F, ops, launched = natten
    start = len(launched)
    nc.varlen_1d_matches(F, ops, mx, rng)
    _ran(launched, start, "varlen")


@pytest.fixture(scope="module")
def allin1():
    return nc.prepare_allin1(load("natten_mlx.extras.allin1", "mlx"))


@pytest.mark.parametrize("rank,kernel,dilation,dim", [(1, 5, 2, 12), (1, 7, 1, 16), (2, 3, 1, 12), (2, 5, 2, 8)])
def test_allin1_qk_rpb_and_av(rng, allin1, rank, kernel, dilation, dim):
    module, launched = allin1
    start = len(launched)
    nc.rpb_ops_match(module, mx, rng, rank, kernel, dilation, dim)
    _ran(launched, start, "")


@pytest.mark.parametrize("rank,kernel,dilation,dim", [(1, 5, 2, 12), (1, 3, 1, 16), (2, 3, 1, 12), (2, 5, 2, 8)])
def test_allin1_backward(rng, allin1, rank, kernel, dilation, dim):
    module, launched = allin1
    start = len(launched)
    fm = module.__port_loader__.loaded["natten_mlx.extras.allin1.functional_metal"]
    nc.rpb_backward_matches(fm, mx, rng, rank, kernel, dilation, dim)
    _ran(launched, start, "")
