"""Driver for optimised_dot.metal (the page's "Optimisation Attributes") and
optimised_dot_fixed.metal.

`[[unroll]]` is no MSL attribute: Apple's compiler warns that it ignores an
unknown attribute and builds the kernel anyway; Alloy does the same (a
UserWarning naming the line). The fix deletes the attribute (the loop has
two constant iterations; `#pragma unroll` would be the real spelling).

What it computes as written (grid = n/8 threads): thread id forms the dot
product of a[8id .. 8id+7] and b[8id .. 8id+7] in float (fma), then
c[id] = simd_sum(acc). Quirks (kept in both files):
  * simd_sum reduces over the thread's SIMD group only, and every lane
    stores it: c holds each SIMD group's partial dot product (over 32 * 8 =
    256 elements), repeated 32 times; nothing reduces across SIMD groups or
    threadgroups (the comment "Cross-SIMD-group reduction" is wrong), so
    the full dot product is never formed.
  * `len` is never read: no bounds check; n must be a multiple of 8 and the
    grid exactly n/8 threads. A partial last SIMD group sums the lanes that
    exist.
  * "fast math" in the comment: nothing in the kernel asks for it.

Run: python examples/guide/optimised_dot.py [cpu|gpu]
"""
import warnings

import numpy as np

import alloy.core as mx
import guide_common as g


def run(a, b, tg=256, out=None, name="optimised_dot_fixed"):
    n = a.size
    assert n % 8 == 0
    k = g.library(name).kernel("optimised_dot")
    return k(args={"a": a, "b": b, "c": out if out is not None else ((n // 8,), mx.float32), "len": n},
             grid=(n // 8, 1, 1), threadgroup=(tg, 1, 1), dispatch="threads")[0]


def main():
    dev = g.device_from_argv()
    rng = np.random.default_rng(0)
    n = 8 * 100_003
    a_np = rng.standard_normal(n).astype(np.float16)
    b_np = rng.standard_normal(n).astype(np.float16)
    a, b = mx.array(a_np), mx.array(b_np)
    ref = g.ref_optimised_dot(a_np, b_np, 256)
    scale = np.abs(g.ref_optimised_dot(np.abs(a_np.astype(np.float64)), np.abs(b_np.astype(np.float64)), 256))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = run(a, b, out=g.nan_like((n // 8,), mx.float32), name="optimised_dot")
        mx.eval(got)
    for w in caught:
        print(f"optimised_dot.metal (verbatim) warning: {w.message}")
    err_ok = np.all(np.abs(g.f64(got) - ref) <= 1e-5 * scale + 1e-6)
    print(f"optimised_dot (verbatim) {'ok' if err_ok else 'MISMATCH'}")
    got = run(a, b, out=g.nan_like((n // 8,), mx.float32))
    t = g.median_time(lambda: [run(a, b)])
    g.report(f"optimised_dot (fixed) n={n} [{dev}]", got, ref, t, 1e-5, 1e-4)


if __name__ == "__main__":
    main()
