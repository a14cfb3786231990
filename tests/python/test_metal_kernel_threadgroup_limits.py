"""Threadgroups of 1024 threads with kernels that want many registers: Metal
runs them (Apple's GPUs give such a pipeline 1024 threads), so Alloy must
too, on the device ALLOY_TEST_DEVICE names (on NVIDIA a 1024-thread block
leaves 64 registers a thread; the kernel must be built to fit)."""
import numpy as np
import pytest

import alloy.core as mx

# Each thread keeps N values live through R rounds that mix them: far more
# than 64 registers' worth once unrolled.
N, R = 96, 6
SOURCE = f"""
    const uint tid = thread_position_in_grid.x;
    const uint n = inp_shape[0];
    float v[{N}];
    #pragma clang loop unroll(full)
    for (int i = 0; i < {N}; ++i)
        v[i] = inp[(tid * 7u + uint(i)) % n];
    #pragma clang loop unroll(full)
    for (int r = 0; r < {R}; ++r) {{
        #pragma clang loop unroll(full)
        for (int i = 0; i < {N}; ++i)
            v[i] = v[i] * 0.5f + v[(i + r + 1) % {N}] * 0.25f;
    }}
    float s = 0.0f;
    #pragma clang loop unroll(full)
    for (int i = 0; i < {N}; ++i)
        s += v[i] * float(i + 1);
    out[tid] = s;
"""


def reference(x, threads):
    x = x.astype(np.float64)
    n = x.shape[0]
    tid = np.arange(threads)[:, None]
    v = x[(tid * 7 + np.arange(N)[None, :]) % n]
    for r in range(R):
        nxt = v.copy()
        for i in range(N):
            nxt[:, i] = v[:, i] * 0.5 + (nxt if (i + r + 1) % N < i else v)[:, (i + r + 1) % N] * 0.25
        v = nxt
    return (v * np.arange(1, N + 1)[None, :]).sum(axis=1)


@pytest.mark.parametrize("tg", [1024, 512, 256])
def test_register_hungry_kernel_runs_in_large_threadgroups(rng, tg):
    threads = 4 * 1024
    x = rng.standard_normal(1000).astype(np.float32)
    k = mx.fast.metal_kernel(name="register_hungry", input_names=["inp"], output_names=["out"], source=SOURCE)
    (out,) = k(inputs=[mx.array(x)], output_shapes=[(threads,)], output_dtypes=[mx.float32], grid=(threads, 1, 1),
               threadgroup=(tg, 1, 1), init_value=float("nan"))
    np.testing.assert_allclose(np.array(out).astype(np.float64), reference(x, threads), rtol=1e-4, atol=1e-3)
