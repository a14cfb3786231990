"""metal_kernel headers that #include MLX's own kernel headers (read from the
installed mlx package at test time, never copied here): a GEMM built from
MLX's steel templates against numpy float64, on the test device and, with
ALLOY_CHECK_CUDA=1 (conftest), compiled by NVRTC for sm_90a."""
import os
import subprocess
import sys

import numpy as np
import pytest

import alloy.core as mx

HEADER = """
#include "mlx/backend/metal/kernels/utils.h"
#include "mlx/backend/metal/kernels/steel/gemm/gemm.h"
using namespace mlx::steel;
"""

# C = A @ B with MLX's GEMMKernel: BM x BN tiles of the output per
# threadgroup of WM x WN SIMD groups, K in steps of BK.
SOURCE = """
    using gemm_kernel = GEMMKernel<T, T, BM, BN, BK, WM, WN, false, false, true, true, float>;
    threadgroup T As[gemm_kernel::tgp_mem_size_a];
    threadgroup T Bs[gemm_kernel::tgp_mem_size_b];
    const int M = a_shape[0], K = a_shape[1], N = b_shape[1];
    GEMMParams params{M, N, K, K, N, N, N / BN, M / BM, 0, 0, 0, 0, K / BK, 0};
    gemm_kernel::run(a, b, c, &params, As, Bs, thread_index_in_simdgroup,
                     simdgroup_index_in_threadgroup, threadgroup_position_in_grid,
                     thread_position_in_threadgroup);
"""

BM, BN, BK, WM, WN = 32, 32, 16, 2, 2


def steel_gemm(a, b, dtype):
    M, K = a.shape
    N = b.shape[1]
    k = mx.fast.metal_kernel(name="steel_gemm", input_names=["a", "b"], output_names=["c"], source=SOURCE,
                             header=HEADER)
    return k(inputs=[a, b], output_shapes=[(M, N)], output_dtypes=[dtype],
             grid=(N // BN * 32, M // BM * WN, WM), threadgroup=(32, WN, WM),
             template=[("T", dtype), ("BM", BM), ("BN", BN), ("BK", BK), ("WM", WM), ("WN", WN)],
             init_value=float("nan"))[0]


@pytest.mark.parametrize("dtype,tol", [(mx.float32, 1e-4), (mx.float16, 2e-2), (mx.bfloat16, 6e-2)])
def test_steel_gemm_matches_numpy(rng, dtype, tol):
    M, N, K = 64, 96, 48
    a = mx.array(rng.standard_normal((M, K)).astype(np.float32)).astype(dtype)
    b = mx.array(rng.standard_normal((K, N)).astype(np.float32)).astype(dtype)
    c = steel_gemm(a, b, dtype)
    a64 = np.array(a.astype(mx.float32)).astype(np.float64)
    b64 = np.array(b.astype(mx.float32)).astype(np.float64)
    got = np.array(c.astype(mx.float32)).astype(np.float64)
    np.testing.assert_allclose(got, a64 @ b64, rtol=tol, atol=tol * np.sqrt(K))


def test_missing_mlx_header_names_the_include_line(tmp_path):
    # A fresh process whose ALLOY_MLX_INCLUDE holds no MLX headers.
    code = """
import alloy.core as mx
k = mx.fast.metal_kernel(name="inc", input_names=["a"], output_names=["o"],
                         source="o[0] = a[0];",
                         header='#include "mlx/backend/metal/kernels/steel/gemm/gemm.h"\\n')
try:
    k(inputs=[mx.array([1.0])], output_shapes=[(1,)], output_dtypes=[mx.float32], grid=(1, 1, 1),
      threadgroup=(1, 1, 1))
    mx.eval(k)
except Exception as e:
    print(type(e).__name__, str(e))
"""
    env = dict(os.environ, ALLOY_MLX_INCLUDE=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "steel/gemm/gemm.h" in out.stdout and "header:1" in out.stdout, out.stdout
    assert '#include "mlx/backend/metal/kernels/steel/gemm/gemm.h"' in out.stdout, out.stdout


# MLX's quantized.h declares function constants (align_M/N/K) for the
# pipelines MLX makes itself; a metal_kernel gives them no value (on Metal
# they stay undefined), which the CPU and CUDA translations must accept. Its
# qmv_impl (4-bit affine weights, 64 threads per 8 output rows) then runs
# as MLX's affine_qmv kernel calls it. quantized.h uses steel's GEMM
# templates without including them, so MLX's own quantized.metal (and this
# header) includes steel/gemm/gemm.h first.
QMV_HEADER = """
#include "mlx/backend/metal/kernels/steel/gemm/gemm.h"
#include "mlx/backend/metal/kernels/quantized.h"
"""
QMV_SOURCE = """
    qmv_impl<T, 64, 4>(w, scales, biases, x, y, in_vec_size, out_vec_size, threadgroup_position_in_grid,
                       simdgroup_index_in_threadgroup, thread_index_in_simdgroup);
"""


@pytest.mark.parametrize("dtype,tol", [(mx.float32, 1e-4), (mx.float16, 2e-2)])
def test_mlx_quantized_header_qmv_matches_numpy(rng, dtype, tol):
    O, K, group = 40, 512, 64
    codes = rng.integers(0, 16, (O, K))
    words = (codes.reshape(O, K // 8, 8).astype(np.uint64) << (4 * np.arange(8, dtype=np.uint64))).sum(-1)
    scales = rng.uniform(0.01, 0.1, (O, K // group))
    biases = rng.normal(0, 0.2, (O, K // group))
    x = rng.standard_normal(K)
    as_t = lambda a: mx.array(a.astype(np.float32)).astype(dtype)  # noqa: E731
    s_t, b_t, x_t = as_t(scales), as_t(biases), as_t(x)
    k = mx.fast.metal_kernel(name="mlx_qmv", input_names=["w", "scales", "biases", "x", "in_vec_size",
                                                           "out_vec_size"],
                             output_names=["y"], source=QMV_SOURCE, header=QMV_HEADER)
    (y,) = k(inputs=[mx.array(words.astype(np.uint32)), s_t, b_t, x_t, mx.array(K, dtype=mx.int32),
                     mx.array(O, dtype=mx.int32)],
             output_shapes=[(O,)], output_dtypes=[dtype], grid=(32, 2 * (O // 8), 1), threadgroup=(32, 2, 1),
             template=[("T", dtype)], init_value=float("nan"))
    as64 = lambda a: np.array(a.astype(mx.float32)).astype(np.float64)  # noqa: E731
    w64 = codes * np.repeat(as64(s_t), group, axis=1) + np.repeat(as64(b_t), group, axis=1)
    want = w64 @ as64(x_t)
    assert y.shape == (O,) and y.dtype == dtype
    np.testing.assert_allclose(as64(y), want, rtol=tol, atol=tol * np.abs(want).max())


def test_mlx_headers_lie_where_code_written_for_mlx_reads_them():
    """Code written for MLX reads MLX's headers itself from
    Path(mx.__file__).parent / "include" (mtplx, jang, mlx-vlm inline them):
    with `import alloy.core as mx` that is the alloy package's include link,
    which holds the installed mlx's headers (the ones metal_kernel reads)."""
    from pathlib import Path

    import mlx.core as real_mx

    ours = Path(mx.__file__).parent / "include"
    theirs = Path(real_mx.__file__).parent / "include"
    for header in ("mlx/backend/metal/kernels/utils.h", "mlx/backend/metal/kernels/steel/gemm/gemm.h"):
        assert (ours / header).read_bytes() == (theirs / header).read_bytes(), header
    assert Path(os.environ["ALLOY_MLX_INCLUDE"]).samefile(ours)
