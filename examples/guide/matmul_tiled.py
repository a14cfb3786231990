"""Driver for matmul_tiled.metal (the page's "Tiled GEMM Kernel").

As written: C = A @ B (float32, A [M, K], B [K, N], row-major), 16x16
tiles through threadgroup memory, with bounds checks on every load and on
the store. Quirks (kept in the verbatim .metal file):
  * TILE_SIZE = 16 is a program-scope constant: the threadgroup must be
    exactly (16, 16, 1), and tileA/tileB need 16*16*4 bytes each from the
    host. Any other threadgroup shape leaves tile entries unwritten (or
    overwritten) and gives wrong sums.
  * It needs WHOLE 16x16 threadgroups: launch with dispatchThreadgroups
    (dispatch="threadgroups", grid = (ceil(N/16), ceil(M/16)) threadgroups).
    With dispatchThreads and M or N not a multiple of 16, the edge
    threadgroups are partial: the missing threads load nothing, and the
    threads that exist read those tile entries (stale or uninitialised
    threadgroup memory) in their dot products, despite the bounds checks.

Run: python examples/guide/matmul_tiled.py [cpu|gpu]
"""
import numpy as np

import alloy.core as mx
import guide_common as g

T = 16


def run(a, b, M, N, K, out=None):
    k = g.library("matmul_tiled").kernel("matmul_tiled")
    return k(args={"A": a, "B": b, "C": out if out is not None else ((M * N,), mx.float32),
                   "M": M, "N": N, "K": K, "tileA": T * T * 4, "tileB": T * T * 4},
             grid=(-(-N // T), -(-M // T), 1), threadgroup=(T, T, 1), dispatch="threadgroups")[0]


def main():
    dev = g.device_from_argv()
    rng = np.random.default_rng(0)
    M, N, K = 257, 250, 300
    a_np = rng.standard_normal((M, K)).astype(np.float32)
    b_np = rng.standard_normal((K, N)).astype(np.float32)
    a, b = mx.array(a_np.ravel()), mx.array(b_np.ravel())
    got = run(a, b, M, N, K, out=g.nan_like((M * N,), mx.float32))
    t = g.median_time(lambda: [run(a, b, M, N, K)])
    ref = (a_np.astype(np.float64) @ b_np.astype(np.float64)).ravel()
    g.report(f"matmul_tiled {M}x{K} @ {K}x{N} [{dev}]", got, ref, t, 1e-4, 1e-4)


if __name__ == "__main__":
    main()
