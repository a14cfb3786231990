"""Consecutive SIMD-group statements that share one exchange on the CPU.

Split into regions, statements like `a = simd_sum(x); b = simd_max(y);`
deposit both arguments in one region and read both results in the next
(msl/cpu_regions_syntax.cpp, simd_batch_length); a statement whose
arguments read what an earlier one assigned starts a new exchange. The
kernel below mixes both kinds, in full and partial SIMD groups; regions
must give the fibers' bits, and both numpy's float64 values.
"""
import numpy as np
import pytest

import alloy.core as mx

SOURCE = """
    uint i = thread_position_in_grid.x;
    float x = inp[i], y = inp[i + n_threads];
    float a = simd_sum(x);
    float b = simd_max(y);
    a += simd_sum(y) * 2;
    float c = simd_sum(a * x);
    float d = simd_prefix_exclusive_sum(x);
    out[i * 4 + 0] = a;
    out[i * 4 + 1] = b;
    out[i * 4 + 2] = c;
    out[i * 4 + 3] = d;
"""


def reference(inp, n, tg):
    x, y = inp[:n].astype(np.float64), inp[n:].astype(np.float64)
    out = np.empty((n, 4))
    for start in range(0, n, tg):
        size = min(tg, n - start)
        for w in range(0, size, 32):
            s = slice(start + w, start + min(w + 32, size))
            a = x[s].sum() + 2 * y[s].sum()
            out[s, 0] = a
            out[s, 1] = y[s].max()
            out[s, 2] = (a * x[s]).sum()
            out[s, 3] = np.concatenate([[0.0], np.cumsum(x[s])[:-1]])
    return out


@pytest.mark.parametrize("tg, n", [(64, 128), (96, 200)])
def test_batched_simd_statements_match_fibers_and_float64(monkeypatch, capfd, rng, tg, n):
    inp = rng.standard_normal(2 * n).astype(np.float32)
    k = mx.fast.metal_kernel(name="simd_batches", input_names=["inp", "n_threads"], output_names=["out"],
                             source=SOURCE)
    got = {}
    for mode in ["auto", "fibers"]:
        monkeypatch.setenv("ALLOY_CPU_SYNC", mode)
        out = k(inputs=[mx.array(inp), mx.array(n, dtype=mx.uint32)], grid=(n, 1, 1), threadgroup=(tg, 1, 1),
                output_shapes=[(n * 4,)], output_dtypes=[mx.float32], init_value=float("nan"),
                verbose=mode == "auto", stream=mx.cpu)[0]
        got[mode] = np.array(out).reshape(n, 4)
        if mode == "auto":
            printed = capfd.readouterr().out
            assert "Threads run as regions." in printed
            # Two exchanges: (a, b, the second sum) and (c, d), c reading a.
            assert printed.count("region_exchange(") == 2, printed
    assert np.array_equal(got["auto"].view(np.uint32), got["fibers"].view(np.uint32))
    np.testing.assert_allclose(got["auto"], reference(inp, n, tg), rtol=1e-5, atol=1e-5)
