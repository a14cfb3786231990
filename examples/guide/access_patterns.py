"""Driver for access_patterns.metal (the page's "Coalesced vs Strided Access":
column_access_bad, row_access_good, column_via_transpose).

As written:
  * column_access_bad and row_access_good compute NOTHING: each loads one
    value into a local `val` that is never used or stored; there is no
    output buffer, so a compiler drops the load and the kernel is empty (a
    benchmark of them times an empty dispatch, not the access pattern).
    Here they return no outputs, and since Alloy is lazy and there is
    nothing to evaluate, calling them runs nothing at all.
    column_access_bad also reads mat[id * N] with no bound: past the matrix
    as soon as the grid exceeds its row count.
  * column_via_transpose is a 32x32-tiled TRANSPOSE, not a column read:
    with grid (N/32, R/32) threadgroups of (32, 32, 1) threads on an R x N
    row-major matrix, out[c, r] = mat[r, c] (out has row stride N). No bounds
    checks: R and N must be multiples of 32; for a non-square matrix the same
    stride N is used for out, so out is an N x N buffer whose first R columns
    get mat^T (R <= N; R > N would overlap rows). The tile is a threadgroup
    array parameter `tile[32][33]` (host: at least 32*33*4 bytes).

Run: python examples/guide/access_patterns.py [cpu|gpu]
"""
import numpy as np

import alloy.core as mx
import guide_common as g


def transpose(mat, R, N, out=None):
    k = g.library("access_patterns").kernel("column_via_transpose")
    return k(args={"mat": mat, "out": out if out is not None else ((N * N,), mx.float32), "N": N,
                   "tile": 32 * 33 * 4},
             grid=(N // 32, R // 32, 1), threadgroup=(32, 32, 1), dispatch="threadgroups")[0]


def main():
    dev = g.device_from_argv()
    lib = g.library("access_patterns")
    rng = np.random.default_rng(0)
    N = 1024
    mat = mx.array(rng.standard_normal(N * N).astype(np.float32))
    for name, args in (("column_access_bad", {"mat": mat, "N": N}), ("row_access_good", {"mat": mat})):
        outs = lib.kernel(name)(args=args, grid=(N, 1, 1), threadgroup=(256, 1, 1))
        print(f"{name:<44} outputs: {outs} (writes nothing; nothing to evaluate, nothing runs)")
    R = N
    got = transpose(mat, R, N, out=g.nan_like((N * N,), mx.float32))
    t = g.median_time(lambda: [transpose(mat, R, N)])
    g.report(f"column_via_transpose {R}x{N} [{dev}]", got, g.ref_column_via_transpose(np.array(mat), R, N).ravel(),
             t, 0, 0)


if __name__ == "__main__":
    main()
