"""Kernels that fill Metal 4 cooperative tensors element by element in
Apple's lane layout (MLX's NAX code: steel/gemm/nax.h BaseNAXFrag::get_coord),
unchanged: MLX's own NAX tile GEMM, read from the installed mlx package, and
mtplx 2.12.2's NAX attention kernels (`sdpa_nax_tile`, `sdpa_nax_flash`,
`sdpa_nax_flash_dsplit`), against numpy float64.

The CPU follows Apple's layout for a SIMD group's 16 x 16-divisible tiles
(metal_cooperative_tensor.h). CUDA keeps the tensor cores' own layout
(README, "Known limits"): there these kernels are expected to give wrong
numbers, which the strict xfail records (it fails the day they come out
right)."""
import os

import numpy as np
import pytest

import alloy.core as mx
from real_mlx_code import load
from references64 import tail_causal_attention

DEVICE = os.environ.get("ALLOY_TEST_DEVICE", "cpu")
cuda_layout = pytest.mark.xfail(DEVICE == "gpu", strict=True,
                                reason="CUDA's cooperative tensors use the tensor cores' lane layout, not Apple's")

NAX_HEADER = """
#include "mlx/backend/metal/kernels/steel/gemm/nax.h"
using namespace mlx::steel;
"""

# C = op(A) op(B) with MLX's NAXTile and tile_matmad_nax, one SIMD group;
# A is stored (M, K), or (K, M) when TA; B (K, N), or (N, K) when TB.
NAX_GEMM = """
    NAXTile<T, TA ? TK : TM, TA ? TM : TK> A;
    NAXTile<T, TB ? TN : TK, TB ? TK : TN> B;
    NAXTile<float, TM, TN> C;
    A.load(a, TA ? TM * 16 : TK * 16);
    B.load(b, TB ? TK * 16 : TN * 16);
    C.clear();
    tile_matmad_nax(C, A, metal::bool_constant<TA>{}, B, metal::bool_constant<TB>{});
    C.store(c, TN * 16);
"""


def as64(x):
    return np.array(x.astype(mx.float32)).astype(np.float64)


@cuda_layout
@pytest.mark.parametrize("dtype,tol", [(mx.float32, 1e-4), (mx.float16, 1e-2)])
@pytest.mark.parametrize("ta,tb", [(False, False), (False, True), (True, False), (True, True)])
def test_mlx_nax_tile_gemm(rng, dtype, tol, ta, tb):
    tm, tk, tn = 2, 3, 2  # fragments of 16 x 16
    M, K, N = 16 * tm, 16 * tk, 16 * tn
    a = mx.array(rng.standard_normal((K, M) if ta else (M, K)).astype(np.float32)).astype(dtype)
    b = mx.array(rng.standard_normal((N, K) if tb else (K, N)).astype(np.float32)).astype(dtype)
    kernel = mx.fast.metal_kernel(name="nax_tile_gemm", input_names=["a", "b"], output_names=["c"],
                                  source=NAX_GEMM, header=NAX_HEADER)
    (c,) = kernel(inputs=[a, b], output_shapes=[(M, N)], output_dtypes=[mx.float32], grid=(32, 1, 1),
                  threadgroup=(32, 1, 1), init_value=float("nan"),
                  template=[("T", dtype), ("TM", tm), ("TK", tk), ("TN", tn), ("TA", ta), ("TB", tb)])
    a64, b64 = as64(a), as64(b)
    want = (a64.T if ta else a64) @ (b64.T if tb else b64)
    np.testing.assert_allclose(as64(c), want, rtol=tol, atol=tol * np.sqrt(K))


@cuda_layout
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("module_name,fn,hq,ql", [
    ("mtplx.kernels.sdpa_nax_tile", "sdpa_nax_tile", 6, 4),
    ("mtplx.kernels.sdpa_nax_flash", "sdpa_nax_flash", 6, 4),
    ("mtplx.kernels.sdpa_nax_flash_dsplit", "sdpa_nax_flash_dsplit", 4, 3),
])
def test_mtplx_nax_attention(rng, dtype, module_name, fn, hq, ql):
    module = load(module_name, "alloy", kernels=True)
    module.nax_available = lambda: True  # its M5 GPU-family gate
    hk, d, capacity, offset = 2, 256, 64, 50
    dt = getattr(mx, dtype)
    q, k, v = (mx.array(rng.standard_normal(shape).astype(np.float32)).astype(dt)
               for shape in [(1, hq, ql, d), (1, hk, capacity, d), (1, hk, capacity, d)])
    before = module.__port_loader__.launches()
    out = getattr(module, fn)(queries=q, keys=k, values=v, offset=offset, scale=d ** -0.5)
    bails = getattr(module, [n for n in vars(module) if n.endswith("bail_counts")][0])
    assert out is not None, f"{fn} declined: {bails}"
    assert module.__port_loader__.launches() > before, f"{fn}: the Metal kernel did not run"
    want = tail_causal_attention(as64(q), as64(k), as64(v), offset, d ** -0.5)
    tol = 2e-3 if dtype == "float16" else 1.5e-2
    np.testing.assert_allclose(as64(out), want, rtol=0, atol=tol)
