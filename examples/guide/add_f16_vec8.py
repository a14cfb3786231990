"""Driver for add_f16_vec8.metal (the page's "Vectorised float4 Load", second
kernel) and its fix add_f16_vec8_fixed.metal.

As written the kernel is not valid MSL: it uses `half8`, and Metal's vector
types have 2, 3 or 4 components only (no 8-wide vectors; `vec<half, 8>` does
not exist either). Building the verbatim file raises RuntimeError naming the
line of the first `half8`. The comment "8 elements per thread with
float4-equivalent" describes the intent: 8 halves = one 128-bit load.

Fix (add_f16_vec8_fixed.metal): the buffers become `half4*` and each thread
adds two half4 (elements 8*id .. 8*id+7), so the launch (grid = n/8 threads)
and the work per thread stay what the page meant. Quirks kept in the fix:
no bounds check, no length, n must be a multiple of 8 and the grid exactly
n/8 threads; the sum is computed and rounded in half.

Run: python examples/guide/add_f16_vec8.py [cpu|gpu]
"""
import numpy as np

import alloy.core as mx
import guide_common as g


def run(a, b, out=None):
    n = a.size
    assert n % 8 == 0
    k = g.library("add_f16_vec8_fixed").kernel("add_f16_vec8")
    return k(args={"a": a, "b": b, "out": out if out is not None else ((n,), mx.float16)},
             grid=(n // 8, 1, 1), threadgroup=(256, 1, 1), dispatch="threads")[0]


def main():
    dev = g.device_from_argv()
    try:
        g.library("add_f16_vec8")
        print("add_f16_vec8.metal (verbatim) built: half8 was expected to be refused")
        raise SystemExit(1)
    except RuntimeError as e:
        print(f"add_f16_vec8.metal (verbatim) refused, as Apple's compiler does:\n  {e}")
    rng = np.random.default_rng(0)
    n = 8 * 125_001
    a = mx.array(rng.standard_normal(n).astype(np.float16))
    b = mx.array(rng.standard_normal(n).astype(np.float16))
    got = run(a, b, out=g.nan_like((n,), mx.float16))
    t = g.median_time(lambda: [run(a, b)])
    g.report(f"add_f16_vec8 (fixed) n={n} [{dev}]", got, g.f64(a) + g.f64(b), t, 2e-3, 2e-3)


if __name__ == "__main__":
    main()
