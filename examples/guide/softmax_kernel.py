"""Driver for softmax_kernel.metal (the page's MSL softmax, "Apple" side).

What it computes as written: a softmax over each THREADGROUP's block of
inputs (not over a row of n, and `n` only masks the tail). With one SIMD
group per threadgroup (8 <= threadgroup <= 32 threads, the only race-free
shape) the result is
    out = e / (sum(e) + v[1] + ... + v[7]),   e = exp(v - max(v)),
v the block's inputs. Quirks (kept in the verbatim .metal file):
  * Data race on shmem[0]: after the barrier that publishes row_max, every
    thread reads row_max = shmem[0], but lane 0 of SIMD group 0 then writes
    its partial sum to shmem[0] (`shmem[lid / 32] = row_sum`) with no barrier
    in between, so with several SIMD groups per threadgroup another SIMD
    group may read SIMD group 0's sum as its max. Results with threadgroups
    of more than 32 threads depend on scheduling; the driver and the test
    launch 32 (or fewer) threads per threadgroup only.
  * The second-pass loops are hard-coded to 8 SIMD groups (i < 8):
    - fewer than 8 SIMD groups: shmem[nsg..7] still hold the inputs stored
      by `shmem[lid] = val` (threads nsg..7 of SIMD group 0). The max is
      unaffected (they belong to SIMD group 0), but they are ADDED to the
      sum: with one SIMD group, v[1..7] are added to the denominator;
    - more than 8 SIMD groups (threadgroup > 256): groups 8.. are ignored;
    - a threadgroup of fewer than 8 threads reads uninitialised shmem.
  * shmem needs max(threadgroup, 8) floats, sized by the host.
  * dispatchThreadgroups with a tail: threads past n hold -INFINITY; if the
    last block has fewer than 8 valid inputs, -INFINITY lands in v[1..7]
    and that block's outputs become -0.0.

Run: python examples/guide/softmax_kernel.py [cpu|gpu]
"""
import numpy as np

import alloy.core as mx
import guide_common as g


def run(x, tg=32, dispatch="threads", out=None):
    n = x.size
    k = g.library("softmax_kernel").kernel("softmax_kernel")
    grid = (n, 1, 1) if dispatch == "threads" else (-(-n // tg), 1, 1)
    return k(args={"input": x, "output": out if out is not None else ((n,), mx.float32), "n": n,
                   "shmem": max(tg, 8) * 4},
             grid=grid, threadgroup=(tg, 1, 1), dispatch=dispatch)[0]


def main():
    dev = g.device_from_argv()
    rng = np.random.default_rng(0)
    n = (1 << 16) + 17  # last threadgroup: 17 threads (>= 8)
    x_np = rng.uniform(0, 3, n).astype(np.float32)
    x = mx.array(x_np)
    got = run(x, out=g.nan_like((n,), mx.float32))
    t = g.median_time(lambda: [run(x)])
    g.report(f"softmax_kernel n={n} tg=32 [{dev}]", got, g.ref_softmax_kernel(x_np, 32), t, 1e-5, 1e-7)


if __name__ == "__main__":
    main()
