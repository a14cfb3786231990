"""Driver for scaled_elu.metal (scaled_elu_f32 and scaled_elu_f16).

As written: out = x > 0 ? x : alpha * (exp(x) - 1), computed in float (the
half variant converts x to float and rounds the result to half).
Quirks (kept in the verbatim .metal file):
  * Nothing is "scaled": it is plain ELU with alpha (SELU would also multiply
    by a lambda); alpha is a float in both variants.
  * exp(x) - 1 instead of expm1-style evaluation: for small negative x the
    subtraction cancels, and the result has only ~1e-7 ABSOLUTE accuracy
    (its relative error grows as x -> 0-).
  * No bounds check and no length: the grid must be exactly n threads (the
    page's C++ uses dispatchThreads(n), which is right).

Run: python examples/guide/scaled_elu.py [cpu|gpu]
"""
import numpy as np

import alloy.core as mx
import guide_common as g


def run(name, x, alpha, out=None):
    n = x.size
    k = g.library("scaled_elu").kernel(name)
    return k(args={"x": x, "out": out if out is not None else ((n,), x.dtype), "alpha": alpha},
             grid=(n, 1, 1), threadgroup=(min(n, 1024), 1, 1), dispatch="threads")[0]


def main():
    dev = g.device_from_argv()
    rng = np.random.default_rng(0)
    n, alpha = 1_000_003, 1.3
    for name, dt, npdt, tol in (("scaled_elu_f32", mx.float32, np.float32, 1e-6),
                                ("scaled_elu_f16", mx.float16, np.float16, 2e-3)):
        x = mx.array((2 * rng.standard_normal(n)).astype(npdt))
        got = run(name, x, alpha, out=g.nan_like((n,), dt))
        t = g.median_time(lambda: [run(name, x, alpha)])
        g.report(f"{name} n={n} [{dev}]", got, g.ref_scaled_elu(g.f64(x), alpha), t, tol, tol)


if __name__ == "__main__":
    main()
