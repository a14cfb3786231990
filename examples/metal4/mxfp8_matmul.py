"""Driver for mxfp8_matmul.metal (the WWDC26 quantized matmul) and
mxfp8_inline.metal (the same with inline tensors): C = A B^T for MXFP8 A
(M x K) and B (N x K), against float64 numpy on the dequantized values.

Run: python examples/metal4/mxfp8_matmul.py [cpu|gpu]
"""
import numpy as np

import alloy.core as mx
import metal4_common as m4

TILEM, TILEN = 64, 32


def run(a, b, M, N):
    """a, b: (codes, scales) pairs of mx arrays. Returns C (M x N) half."""
    k = m4.library("mxfp8_matmul").kernel("matmul")
    return k(args={"matrixA": a, "matrixB": b, "matrixC": ((M, N), mx.float16)},
             grid=(-(-N // TILEN), -(-M // TILEM), 1), threadgroup=(128, 1, 1), dispatch="threadgroups")[0]


def run_inline(a, b, M, N, K):
    k = m4.library("mxfp8_inline").kernel("matmul_inline")
    return k(args={"dataBufferA": a[0], "scalesBufferA": a[1], "dataBufferB": b[0], "scalesBufferB": b[1],
                   "bufferC": ((M * N,), mx.float32), "M": M, "N": N, "K": K},
             grid=(-(-N // 32), -(-M // 32), 1), threadgroup=(128, 1, 1), dispatch="threadgroups")[0]


def main():
    dev = m4.device_from_argv()
    seed = int(np.random.SeedSequence().entropy % 2**32)
    rng = np.random.default_rng(seed)
    print(f"seed {seed}")
    M, N, K = 200, 100, 256
    a_np = m4.random_mxfp8(rng, M, K)
    b_np = m4.random_mxfp8(rng, N, K)
    a = tuple(mx.array(x) for x in a_np)
    b = tuple(mx.array(x) for x in b_np)
    ref = m4.dequantize(*a_np) @ m4.dequantize(*b_np).T
    got = run(a, b, M, N)
    t = m4.median_time(lambda: [run(a, b, M, N)])
    # half output: its rounding dominates
    m4.report(f"mxfp8 matmul {M}x{K} @ ({N}x{K})^T [{dev}]", got, ref, t, 2e-3, 1e-3 * np.abs(ref).max())
    got = run_inline(a, b, M, N, K).reshape(M, N)
    t = m4.median_time(lambda: [run_inline(a, b, M, N, K)])
    m4.report(f"mxfp8 matmul, inline tensors [{dev}]", got, ref, t, 1e-5, 1e-6 * np.abs(ref).max())


if __name__ == "__main__":
    main()
