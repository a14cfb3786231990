"""Driver for memory_spaces_demo.metal (the page's "Address Space Demo").

As written it computes out[gid] = input[gid] * scale, staged through
threadgroup memory. Quirks (kept in the verbatim .metal file):
  * No bounds check and no length parameter: the grid must be exactly n
    threads (dispatch="threads"); dispatchThreadgroups with n not a multiple of
    the threadgroup size reads and writes past the buffers.
  * The threadgroup_barrier is pointless: each thread reads back only the
    slot it wrote itself (shared_tile[lid]); no data is exchanged.
  * shared_tile has no size in the kernel: the host must give at least
    threadgroup-size * 4 bytes ([[threadgroup(0)]]), or lid indexes past it.

Run: python examples/guide/memory_spaces_demo.py [cpu|gpu]
"""
import numpy as np

import alloy.core as mx
import guide_common as g


def run(x, scale, tg=256, out=None):
    n = x.size
    k = g.library("memory_spaces_demo").kernel("memory_spaces_demo")
    return k(args={"global_input": x, "global_output": out if out is not None else ((n,), mx.float32),
                   "scale": scale, "shared_tile": tg * 4},
             grid=(n, 1, 1), threadgroup=(tg, 1, 1), dispatch="threads")[0]


def main():
    dev = g.device_from_argv()
    rng = np.random.default_rng(0)
    n, scale = 1_000_003, 1.5
    x = mx.array(rng.standard_normal(n).astype(np.float32))
    got = run(x, scale, out=g.nan_like((n,), mx.float32))
    t = g.median_time(lambda: [run(x, scale)])
    g.report(f"memory_spaces_demo n={n} [{dev}]", got, g.ref_memory_spaces_demo(np.array(x), scale), t, 1e-6, 0)


if __name__ == "__main__":
    main()
