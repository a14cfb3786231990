"""jang's Metal kernels (PyPI `jang`, package jang_tools) on Alloy, loaded
unchanged from the installed files with their imports pointed at Alloy
(real_mlx_code.py; the package's __init__, which imports its model zoo, never
runs): the Hadamard rotation kernels, the TurboQuant matmuls (dense, MoE
gather, fused gate/up/SwiGLU, the Metal 4 tensor_ops and NAX lanes), jangh's
JANGTQ v2 decode kernels and DSV4's indexed attention and indexer kernels,
each through the package's own Python entry point, against float64 numpy
references and, where the package has a pure-MLX reference, that reference
run by real MLX (CPU) and by Alloy. The checks are
tests/pyshared/jang_checks.py's (its docstring lists what runs, against
what), shared with alloy.mlx's suite (tests/mlx_plugin/test_jang.py)."""
import pytest

import alloy.core as ax
import jang_checks as jc
from jang_checks import apple_lane_layout


@pytest.fixture(scope="module")
def real():
    """The package's pure-MLX references as real MLX runs them."""
    return jc.references()


@pytest.mark.parametrize("dim", list(jc.HADAMARD_DIMS))
def test_hadamard_rotate_metal(rng, real, dim):
    jc.check_hadamard_rotate_metal("alloy", ax, rng, real, dim)


@pytest.mark.parametrize("in_f,out_f,bits", jc.TQ_SHAPES, ids=jc.TQ_IDS)
def test_tq_matmul_layer(rng, real, in_f, out_f, bits):
    jc.check_tq_matmul_layer("alloy", ax, rng, real, in_f, out_f, bits)


@pytest.mark.parametrize("in_f,out_f,bits", jc.GATHER_SHAPES, ids=jc.GATHER_IDS)
def test_gather_tq_matmul(rng, real, in_f, out_f, bits):
    jc.check_gather_tq_matmul("alloy", ax, rng, real, in_f, out_f, bits)


@pytest.mark.parametrize("in_f,out_f,bits", jc.FUSED_GATE_UP_SHAPES, ids=jc.FUSED_GATE_UP_IDS)
def test_fused_gate_up(rng, real, in_f, out_f, bits):
    jc.check_fused_gate_up("alloy", ax, rng, real, in_f, out_f, bits)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_tq_matmul_mpp_dense(rng, real, monkeypatch, dtype):
    jc.check_tq_matmul_mpp_dense("alloy", ax, rng, real, monkeypatch, dtype)


@apple_lane_layout
@pytest.mark.parametrize("dtype,batch", jc.MPP_NAX_CASES)
def test_tq_matmul_mpp_nax(rng, real, monkeypatch, tmp_path, dtype, batch):
    jc.check_tq_matmul_mpp_nax("alloy", ax, rng, real, monkeypatch, tmp_path, dtype, batch)


@apple_lane_layout
def test_mpp_nax_grouped_gather_and_fused_swiglu(rng, real, monkeypatch, tmp_path):
    jc.check_mpp_nax_grouped_gather_and_fused_swiglu("alloy", ax, rng, real, monkeypatch, tmp_path)


@pytest.fixture(scope="module")
def jangh(real):
    return jc.load_jangh("alloy", real)


def test_jangh_h32_rows(rng, real, jangh):
    jc.check_jangh_h32_rows("alloy", ax, rng, real, jangh)


@pytest.mark.parametrize("bits", jc.JANGH_BITS)
@pytest.mark.parametrize("K,N", jc.JANGH_SHAPES, ids=jc.JANGH_SHAPE_IDS)
def test_jangh_gather_qmv(rng, real, jangh, bits, K, N):
    jc.check_jangh_gather_qmv("alloy", ax, rng, real, jangh, bits, K, N)


@pytest.mark.parametrize("bits", [2, 4])
def test_jangh_gather_qmm_sorted_on_mlx_headers(rng, real, jangh, bits):
    jc.check_jangh_gather_qmm_sorted("alloy", ax, rng, real, jangh, bits)


def test_dsv4_heads16_prefill_attention(rng, real, monkeypatch):
    jc.check_dsv4_heads16_prefill_attention("alloy", ax, rng, real, monkeypatch)


@pytest.mark.parametrize("rows", jc.DECODE_ROWS, ids=jc.DECODE_IDS)
def test_dsv4_indexed_decode_attention(rng, real, monkeypatch, rows):
    jc.check_dsv4_indexed_decode_attention("alloy", ax, rng, real, monkeypatch, rows)


def test_dsv4_fused_indexer_scores(rng, real, monkeypatch):
    jc.check_dsv4_fused_indexer_scores("alloy", ax, rng, real, monkeypatch)
