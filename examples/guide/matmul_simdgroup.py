"""Driver for matmul_simdgroup.metal (the page's "simdgroup_matrix MMA") and
its compile fix matmul_simdgroup_fixed.metal.

As written the kernel does not compile: `simdgroup_matrix_initialize(0, acc)`
is no Metal function (Metal's are make_filled_simdgroup_matrix<T, 8, 8>(v),
the diagonal constructor simdgroup_matrix<T, 8, 8>(d), simdgroup_load/store,
simdgroup_multiply[_accumulate]). The fix replaces that one line by
`acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);` and keeps the rest.

What the fixed kernel computes (one SIMD group = one threadgroup of 32
threads per 8x8 tile of C; launch threadgroup=(32,1,1), grid=(N/8, M/8)
threadgroups): A is loaded with row stride N instead of K, so
    C[i, j] = sum_{k < K} A_flat[i*N + k] * B[k, j]
which is A @ B only when N == K. Quirks (kept in both files):
  * wrong stride for A (N for K): for N != K the result is wrong, and for
    N > K the last rows read past A's M*K elements;
  * M is never read; origin_A and origin_B are computed and never used;
  * no bounds checks: M, N and K must be multiples of 8 (K is stepped by 8
    and each load reads a full 8x8 block);
  * one SIMD group per threadgroup: with more, every SIMD group computes and
    stores the same tile;
  * half inputs, float32 accumulation (mixed-precision MMA, valid in Metal).

Run: python examples/guide/matmul_simdgroup.py [cpu|gpu]
"""
import numpy as np

import alloy.core as mx
import guide_common as g


def run(a, b, M, N, K, out=None, name="matmul_simdgroup_fixed"):
    k = g.library(name).kernel("matmul_simdgroup")
    return k(args={"A": a, "B": b, "C": out if out is not None else ((M * N,), mx.float32), "M": M, "N": N, "K": K},
             grid=(N // 8, M // 8, 1), threadgroup=(32, 1, 1), dispatch="threadgroups")[0]


def main():
    dev = g.device_from_argv()
    try:
        lib = g.library("matmul_simdgroup")
        mx.eval(lib.kernel("matmul_simdgroup")(
            args={"A": mx.zeros((64,), mx.float16) + 1, "B": mx.zeros((64,), mx.float16) + 1,
                  "C": ((64,), mx.float32), "M": 8, "N": 8, "K": 8},
            grid=(1, 1, 1), threadgroup=(32, 1, 1), dispatch="threadgroups"))
        print("matmul_simdgroup.metal (verbatim) ran: simdgroup_matrix_initialize was expected to be refused")
        raise SystemExit(1)
    except RuntimeError as e:
        print(f"matmul_simdgroup.metal (verbatim) refused (simdgroup_matrix_initialize is no Metal function):\n  {e}")
    rng = np.random.default_rng(0)
    for M, N, K in ((128, 128, 128), (64, 32, 96)):  # square, then N < K (A read with stride N)
        a_np = rng.standard_normal(M * K).astype(np.float16)
        b_np = rng.standard_normal(K * N).astype(np.float16)
        a, b = mx.array(a_np), mx.array(b_np)
        got = run(a, b, M, N, K, out=g.nan_like((M * N,), mx.float32))
        t = g.median_time(lambda: [run(a, b, M, N, K)])
        ref = g.ref_matmul_simdgroup(a_np, b_np, M, N, K).ravel()
        g.report(f"matmul_simdgroup (fixed) M={M} N={N} K={K} [{dev}]", got, ref, t, 1e-5, 1e-4)


if __name__ == "__main__":
    main()
