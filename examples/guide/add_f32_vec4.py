"""Driver for add_f32_vec4.metal (the page's "Vectorised float4 Load", first kernel).

As written: out[4i..4i+3] = a[4i..4i+3] + b[4i..4i+3], one float4 per thread.
Quirks (kept in the verbatim .metal file):
  * No bounds check and no length: the grid must be exactly n/4 threads, and
    n must be a multiple of 4 (a tail of 1-3 floats cannot be handled).

Run: python examples/guide/add_f32_vec4.py [cpu|gpu]
"""
import numpy as np

import alloy.core as mx
import guide_common as g


def run(a, b, out=None):
    n = a.size
    assert n % 4 == 0
    k = g.library("add_f32_vec4").kernel("add_f32_vec4")
    return k(args={"a": a, "b": b, "out": out if out is not None else ((n,), mx.float32)},
             grid=(n // 4, 1, 1), threadgroup=(256, 1, 1), dispatch="threads")[0]


def main():
    dev = g.device_from_argv()
    rng = np.random.default_rng(0)
    n = 4 * 250_001
    a = mx.array(rng.standard_normal(n).astype(np.float32))
    b = mx.array(rng.standard_normal(n).astype(np.float32))
    got = run(a, b, out=g.nan_like((n,), mx.float32))
    t = g.median_time(lambda: [run(a, b)])
    g.report(f"add_f32_vec4 n={n} [{dev}]", got, g.f64(a) + g.f64(b), t, 1e-6, 1e-6)


if __name__ == "__main__":
    main()
