"""Driver for binary_op.metal (the templated elementwise op and its three
[[host_name]] instantiations binary_add_f32, binary_add_f16, binary_mul_f32).

As written: out[id] = a[id] + b[id] (float32 / half) or a[id] * b[id]
(float32). Quirks (kept in the verbatim .metal file):
  * No bounds check and no length: the grid must be exactly n threads.
  * Sub, Divide and Maximum are defined but never instantiated: they are no
    entry points of the library (kernel_names lists only the three above).
  * The operation structs are declared after the template that uses them;
    fine, since Op{} is dependent and only looked up at instantiation.

Run: python examples/guide/binary_op.py [cpu|gpu]
"""
import numpy as np

import alloy.core as mx
import guide_common as g

CASES = (("binary_add_f32", mx.float32, np.float32, np.add, 1e-6),
         ("binary_add_f16", mx.float16, np.float16, np.add, 2e-3),
         ("binary_mul_f32", mx.float32, np.float32, np.multiply, 1e-6))


def run(name, a, b, out=None):
    n = a.size
    k = g.library("binary_op").kernel(name)
    return k(args={"a": a, "b": b, "out": out if out is not None else ((n,), a.dtype)},
             grid=(n, 1, 1), threadgroup=(256, 1, 1), dispatch="threads")[0]


def main():
    dev = g.device_from_argv()
    rng = np.random.default_rng(0)
    n = 1_000_003
    for name, dt, npdt, op, tol in CASES:
        a = mx.array(rng.standard_normal(n).astype(npdt))
        b = mx.array(rng.standard_normal(n).astype(npdt))
        got = run(name, a, b, out=g.nan_like((n,), dt))
        t = g.median_time(lambda: [run(name, a, b)])
        g.report(f"{name} n={n} [{dev}]", got, op(g.f64(a), g.f64(b)), t, tol, tol)


if __name__ == "__main__":
    main()
