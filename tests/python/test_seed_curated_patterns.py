"""The curated patterns of seed 003 (MLX custom-kernel notes) as the page
writes them: the block Cholesky kernel (a body with device-memory barriers),
the panel QR sketch (compiles and runs as the no-op it is) and the debug-flag
buffer pattern. `launch_with_timeout` is tested with the fault issue's
interruptible launches (test_kernel_faults.py)."""
import numpy as np
import pytest

import alloy.core as mx

CHOLESKY_HEADER = """
#include <metal_stdlib>
#include <metal_math>
using namespace metal;
"""

# Verbatim from the page.
CHOLESKY_SOURCE = """
    // thread and problem sizing
    uint tid = thread_position_in_grid.x;
    uint n = A_shape[0];
    uint blk = block_param[0];      // block size
    uint nblk = (n + blk - 1) / blk;
    uint nthreads = thread_count[0];

    for (uint k = 0; k < nblk; ++k) {
        uint b0 = k * blk, b1 = min(b0 + blk, n);
        // 1) diagonal block with single thread for stability
        if (tid == 0) {
            for (uint j = b0; j < b1; ++j) {
                float s = 0.0f;
                for (uint p = 0; p < j; ++p) s += out[j*n + p] * out[j*n + p];
                float d = A[j*n + j] - s; d = d <= 1e-10f ? 1e-10f : d;
                out[j*n + j] = sqrt(d);
                for (uint i = j+1; i < b1; ++i) {
                    float acc = 0.0f;
                    for (uint p = 0; p < j; ++p) acc += out[i*n + p] * out[j*n + p];
                    float denom = out[j*n + j];
                    out[i*n + j] = denom > 1e-10f ? (A[i*n + j] - acc) / denom : 0.0f;
                }
            }
        }
        threadgroup_barrier(mem_flags::mem_device);
        // 2) trailing updates: distribute rows across threads
        for (uint row = tid; row < n; row += nthreads) {
            if (row >= b1) {
                for (uint j = b0; j < b1; ++j) {
                    float acc = 0.0f;
                    for (uint p = 0; p < j; ++p) acc += out[row*n + p] * out[j*n + p];
                    float denom = out[j*n + j];
                    out[row*n + j] = denom > 1e-10f ? (A[row*n + j] - acc) / denom : 0.0f;
                }
            }
        }
        threadgroup_barrier(mem_flags::mem_device);
    }
"""

cholesky_kernel = mx.fast.metal_kernel(
    name="block_cholesky_kernel",
    input_names=["A", "block_param", "thread_count"],
    output_names=["out"],
    source=CHOLESKY_SOURCE, header=CHOLESKY_HEADER, ensure_row_contiguous=True,
)


def block_cholesky(A, block_size=16):
    nthreads = min(32, A.shape[0])
    return cholesky_kernel(
        inputs=[A,
                mx.array([block_size], dtype=mx.uint32),
                mx.array([nthreads], dtype=mx.uint32)],
        output_shapes=[A.shape], output_dtypes=[A.dtype],
        grid=(nthreads, 1, 1), threadgroup=(nthreads, 1, 1),
    )[0]


@pytest.mark.parametrize("n,block", [(5, 16), (16, 16), (33, 16), (64, 8), (100, 16)])
def test_block_cholesky_reproduces_spd_matrices(rng, n, block):
    m = rng.standard_normal((n, n))
    a = m @ m.T / n + np.eye(n)  # well conditioned SPD
    out = block_cholesky(mx.array(a.astype(np.float32)), block_size=block)
    # The kernel writes the lower triangle only (the rest of `out` is whatever
    # the allocation held, as on Metal).
    lower = np.tril(np.array(out).astype(np.float64))
    np.testing.assert_allclose(lower @ lower.T, a, rtol=0, atol=2e-5 * np.abs(a).max())
    np.testing.assert_allclose(lower, np.linalg.cholesky(a), rtol=0, atol=5e-5)


QR_HEADER = """
#include <metal_stdlib>
using namespace metal;
"""

QR_SOURCE = r"""
    uint tid = thread_position_in_grid.x;
    uint m = A_shape[0];
    uint n = A_shape[1];
    uint bw = panel_shape[0];  // panel width

    for (uint k = 0; k < min(m, n); k += bw) {
        uint k1 = min(k + bw, n);
        // 1) form Householder vectors for columns k..k1-1 (single thread for stability)
        if (tid == 0) {
            // compute v, tau for each column; apply to panel
            // add small jitter if column norm is tiny to avoid breakdown
        }
        threadgroup_barrier(mem_flags::mem_device);
        // 2) apply block of reflectors to trailing matrix in parallel
        for (uint col = k1 + tid; col < n; col += grid_size.x) {
            // compute W = V^T * A[:, col]; A[:, col] -= V * (tau .* W)
        }
        threadgroup_barrier(mem_flags::mem_device);
    }
"""


def test_panel_qr_sketch_compiles_and_runs_as_the_no_op_it_is(rng):
    kernel = mx.fast.metal_kernel(
        name="panel_qr_kernel",
        input_names=["A", "panel"], output_names=["Q", "R"],
        source=QR_SOURCE, header=QR_HEADER, ensure_row_contiguous=True,
    )
    m, n = 24, 16
    a = mx.array(rng.standard_normal((m, n)).astype(np.float32))
    q, r = kernel(inputs=[a, mx.zeros((4,), dtype=mx.int32)], output_shapes=[(m, m), (m, n)],
                  output_dtypes=[mx.float32, mx.float32], grid=(32, 1, 1), threadgroup=(32, 1, 1),
                  init_value=float("nan"))
    # Its loops have empty bodies: nothing is written, the poison stays.
    assert np.isnan(np.array(q)).all() and np.isnan(np.array(r)).all()


DEBUG_SOURCE = """
    uint tid = thread_position_in_grid.x;
    uint m = A_shape[0];
    uint n = A_shape[1];
    if (tid == 0) {
        dbg[1] = m; dbg[2] = n; dbg[3] = min(m, n);
        dbg[5] = threads_per_threadgroup.x; dbg[6] = threads_per_grid.x;
    }
    // Preflight: refuse matrices larger than the kernel supports.
    if (m * n > max_elems[0]) {
        if (tid == 0) { dbg[13] = 1.0f; dbg[14] = float(m * n); }
        return;
    }
    if (tid == 0) dbg[0] = 1.0f;
    float norm2 = 0.0f;
    for (uint i = tid; i < m * n; i += threads_per_grid.x) norm2 += A[i] * A[i];
    norm2 = simd_sum(norm2);
    if (tid == 0) {
        if (isnan(norm2) || isinf(norm2)) { dbg[13] = 4.0f; dbg[14] = norm2; return; }
        dbg[8] = sqrt(norm2);
        dbg[12] = 1.0f;
        dbg[15] = 1.0f;
    }
"""


def test_debug_flag_buffer_pattern(rng):
    kernel = mx.fast.metal_kernel(name="debug_flags", input_names=["A", "max_elems"], output_names=["dbg"],
                                  source=DEBUG_SOURCE)

    def run(a, max_elems):
        return np.array(kernel(inputs=[mx.array(a), mx.array([max_elems], dtype=mx.uint32)],
                               output_shapes=[(16,)], output_dtypes=[mx.float32], grid=(32, 1, 1),
                               threadgroup=(32, 1, 1), init_value=0)[0])

    a = rng.standard_normal((6, 5)).astype(np.float32)
    ok = run(a, 1000)
    assert list(ok[[0, 1, 2, 3, 5, 6, 12, 13, 15]]) == [1, 6, 5, 5, 32, 32, 1, 0, 1]
    np.testing.assert_allclose(ok[8], np.linalg.norm(a.astype(np.float64)), rtol=1e-5)
    too_big = run(a, 10)
    assert too_big[0] == 0 and too_big[13] == 1 and too_big[14] == 30 and too_big[15] == 0
    a[2, 3] = np.inf
    bad = run(a, 1000)
    assert bad[13] == 4 and np.isinf(bad[14]) and bad[15] == 0
