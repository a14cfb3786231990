"""Driver for flash_attention.metal (the page's "Flash Attention (Simplified)").

What it computes as written, for ONE head (Q, K as [N, D] half):
    Out = softmax(scale * Q K^T) @ K      (rounded to half)
Quirks (kept in the verbatim .metal file):
  * V is never read: the block loaded into kv_tile is K, and the output
    accumulator o[d] is fed from kv_tile, so K is used as the values.
  * No batch/head indexing: the comments say [B, H, N, D], but Q, K and Out
    are indexed q_idx * D + d with q_idx < N, i.e. a single [N, D] head.
  * q[64] and o[64] are fixed register arrays: D > 64 writes past them.
  * The cooperative tile load strides by the SIMD lane (`i = lane; i += 32`),
    not by the thread's index in the threadgroup: every SIMD group loads the
    whole block (redundant, benign same-value writes), and a threadgroup
    whose only SIMD group is partial (fewer than 32 threads, e.g. the last
    threadgroup of a dispatchThreads grid with N % tg < 32) leaves tile
    entries unloaded. Launch with tg a multiple of 32 and N % tg == 0 or >= 32.
  * `if (q_idx >= N) return;` sits before the threadgroup barriers: with
    dispatchThreadgroups and N not a multiple of the threadgroup, the
    returned threads skip the barriers (undefined behaviour in Metal).
    Launch with dispatch="threads" and grid = N.
  * scale is a parameter, not 1/sqrt(D) (the caller passes it); kv_tile
    needs BLOCK_SIZE * D halves (64 * D * 2 bytes) from the host.

Run: python examples/guide/flash_attention.py [cpu|gpu]
"""
import math

import numpy as np

import alloy.core as mx
import guide_common as g


def run(q, k, v, N, D, scale, tg=64, out=None):
    kern = g.library("flash_attention").kernel("flash_attention")
    return kern(args={"Q": q, "K": k, "V": v, "Out": out if out is not None else ((N * D,), mx.float16),
                      "N": N, "D": D, "scale": scale, "kv_tile": 64 * D * 2},
                grid=(N, 1, 1), threadgroup=(tg, 1, 1), dispatch="threads")[0]


def main():
    dev = g.device_from_argv()
    rng = np.random.default_rng(0)
    N, D = 1000, 64  # last threadgroup of 64: 40 threads (one full SIMD group)
    scale = 1 / math.sqrt(D)
    q_np, k_np, v_np = (rng.standard_normal((N, D)).astype(np.float16) for _ in range(3))
    q, k, v = (mx.array(t.ravel()) for t in (q_np, k_np, v_np))
    got = run(q, k, v, N, D, scale, out=g.nan_like((N * D,), mx.float16))
    t = g.median_time(lambda: [run(q, k, v, N, D, scale)])
    g.report(f"flash_attention N={N} D={D} [{dev}]", got, g.ref_flash_attention(q_np, k_np, scale).ravel(), t,
             2e-3, 2e-3)


if __name__ == "__main__":
    main()
