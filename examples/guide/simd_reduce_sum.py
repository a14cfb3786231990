"""Driver for simd_reduce_sum.metal (the page's "SIMD-Group Intrinsics").

As written, lane 0 of each SIMD group writes the sum of its SIMD group's
inputs (the lanes that exist) to output[sg], sg = simdgroup_index_in_threadgroup.
Quirks (kept in the verbatim .metal file):
  * output is indexed by the SIMD group's index INSIDE its threadgroup, not
    in the grid: with more than one threadgroup, every threadgroup writes
    output[0 .. tg/32-1] and the last writer wins (a race across
    threadgroups). Only a single-threadgroup launch (n <= 1024) is
    well-defined; results of other threadgroups are lost.
  * No bounds check / no length: grid must be exactly n (dispatch="threads");
    a partial last SIMD group sums only the lanes that exist.
  * The sum is one SIMD group's, not a reduction of the whole input.

Run: python examples/guide/simd_reduce_sum.py [cpu|gpu]
"""
import numpy as np

import alloy.core as mx
import guide_common as g


def run(x, tg=None, out=None):
    n = x.size
    tg = tg or n
    n_out = -(-min(n, tg) // g.SIMD)
    k = g.library("simd_reduce_sum").kernel("simd_reduce_sum")
    return k(args={"input": x, "output": out if out is not None else ((n_out,), mx.float32)},
             grid=(n, 1, 1), threadgroup=(tg, 1, 1), dispatch="threads")[0]


def main():
    dev = g.device_from_argv()
    rng = np.random.default_rng(0)
    n = 1000  # one threadgroup: the only race-free launch
    x = mx.array(rng.standard_normal(n).astype(np.float32))
    got = run(x, out=g.nan_like((-(-n // 32),), mx.float32))
    t = g.median_time(lambda: [run(x)])
    g.report(f"simd_reduce_sum n={n} (1 threadgroup) [{dev}]", got, g.ref_simd_reduce_sum_one_group(np.array(x)),
             t, 1e-5, 1e-5)


if __name__ == "__main__":
    main()
