"""Driver for vector_add.metal (vector_add and vector_add_half).

As written: out[id] = a[id] + b[id] in float32, and in half for
vector_add_half (the sum is rounded to half).
Quirks (kept in the verbatim .metal file):
  * No bounds check and no length parameter: correct only when the grid is
    exactly n threads (dispatchThreads). The page's own C++ host code
    dispatches (n + 255) / 256 whole threadgroups with dispatchThreadgroups,
    so for n not a multiple of 256 its last threadgroup reads past a and b
    and writes past out.

Run: python examples/guide/vector_add.py [cpu|gpu]
"""
import numpy as np

import alloy.core as mx
import guide_common as g


def run(name, a, b, out=None):
    n = a.size
    k = g.library("vector_add").kernel(name)
    return k(args={"a": a, "b": b, "out": out if out is not None else ((n,), a.dtype)},
             grid=(n, 1, 1), threadgroup=(256, 1, 1), dispatch="threads")[0]


def main():
    dev = g.device_from_argv()
    rng = np.random.default_rng(0)
    n = 1_000_003
    for name, dt, npdt, tol in (("vector_add", mx.float32, np.float32, 1e-6),
                                ("vector_add_half", mx.float16, np.float16, 2e-3)):
        a = mx.array(rng.standard_normal(n).astype(npdt))
        b = mx.array(rng.standard_normal(n).astype(npdt))
        got = run(name, a, b, out=g.nan_like((n,), dt))
        t = g.median_time(lambda: [run(name, a, b)])
        g.report(f"{name} n={n} [{dev}]", got, g.f64(a) + g.f64(b), t, tol, tol)


if __name__ == "__main__":
    main()
