"""Driver for flash_attention.metal (the WWDC26 attention snippets completed
into a flash-attention forward): O = softmax(scale Q K^T) V per head, Q, K,
V half (heads, S, D), O float, against float64 numpy.

Run: python examples/metal4/attention_driver.py [cpu|gpu] [heads] [S]
"""
import functools
import sys

import numpy as np

import alloy.core as mx
import metal4_common as m4

D, ROWS = 64, 64  # head dimension; query rows per threadgroup (4 SIMD groups x 16)


def run(q, k, v, scale):
    heads, S, _ = q.shape
    kern = m4.library("flash_attention").kernel("flash_attention")
    return kern(args={"Q": q, "K": k, "V": v, "O": ((heads, S, D), mx.float32), "S": S, "scale": scale},
                grid=(-(-S // ROWS), heads, 1), threadgroup=(128, 1, 1), dispatch="threadgroups")[0]


@functools.lru_cache(maxsize=None)
def tiled_kernel(d=128, nsimd=8, bk=64, prefetch=1, q_shared=0, rows=16):
    """flash_attention_tiled.metal with its shape constants set."""
    src = (f"#define FA_D {d}\n#define FA_NSIMD {nsimd}\n#define FA_BK {bk}\n#define FA_PREFETCH {prefetch}\n"
           f"#define FA_QSHARED {q_shared}\n#define FA_ROWS {rows}\n" + m4.source("flash_attention_tiled"))
    return mx.fast.metal_library(src).kernel("flash_attention_tiled")


def run_tiled(q, k, v, scale, nsimd=8, bk=64, out=None, stream=None, prefetch=1, q_shared=0, rows=16):
    """The tiled kernel: Q, K, V half (heads, S, D) -> O half. prefetch: the
    next K and V block read into registers during this one; q_shared: Q read
    from threadgroup memory rather than held in registers; rows: query rows
    per SIMD group (16 or 32)."""
    heads, S, d = q.shape
    per_group = rows * nsimd
    kw = {} if stream is None else {"stream": stream}
    return tiled_kernel(d, nsimd, bk, prefetch, q_shared, rows)(
        args={"Q": q, "K": k, "V": v, "O": out if out is not None else ((heads, S, d), mx.float16), "S": S,
              "scale": scale},
        grid=(-(-S // per_group), heads, 1), threadgroup=(32 * nsimd, 1, 1), dispatch="threadgroups", **kw)[0]


def reference(q, k, v, scale):
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    s = scale * q @ np.swapaxes(k, -1, -2)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ v


def main():
    dev = m4.device_from_argv()
    heads = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    S = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    seed = int(np.random.SeedSequence().entropy % 2**32)
    rng = np.random.default_rng(seed)
    print(f"seed {seed}")
    q, k, v = (rng.standard_normal((heads, S, D)).astype(np.float16) for _ in range(3))
    scale = 1.0 / np.sqrt(D)
    qa, ka, va = mx.array(q), mx.array(k), mx.array(v)
    got = run(qa, ka, va, scale)
    t = m4.median_time(lambda: [run(qa, ka, va, scale)], reps=3)
    m4.report(f"flash attention heads={heads} S={S} D={D} [{dev}]", got, reference(q, k, v, scale), t, 1e-4, 1e-4)


if __name__ == "__main__":
    main()
