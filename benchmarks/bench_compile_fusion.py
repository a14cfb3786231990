"""mx.compile's elementwise fusion (issue 16, item 3): chains of 10
elementwise ops, and 4 ops ending in a mean, over float32 arrays, compiled
(one fused node) against uncompiled (one pass over memory per op) and, on
the CPU, numpy, same data, same process. On the GPU each compiled chain's
bandwidth (inputs read + output written, per second) is also given as a
fraction of a device-to-device copy's, measured in the same run. Also checks
the compiled result equals the uncompiled one bit for bit.

Usage: python benchmarks/bench_compile_fusion.py [--device cpu|gpu] [--n 67108864] [--reps 3] [--no-cache]
"""
import argparse

import numpy as np

import alloy.core as mx
from timing import best_ms


def arithmetic(x, y):  # 10 cheap ops: memory-bound unfused
    a = x * 1.5 + y
    b = a - x * 0.25
    c = mx.maximum(b, y) * a
    d = mx.minimum(c, 4.0) - b
    return d * d + 1.0


def transcendental(x, y):  # 10 ops, some libm-bound
    a = mx.exp(x * 0.5) + y
    b = mx.sin(a) * 2.0 - mx.abs(y)
    c = mx.sqrt(mx.abs(b) + 1.0)
    return mx.tanh(c * x) / (1.0 + a)


def reduced(x, y):  # 4 ops and a mean: a loss
    return mx.mean(mx.square(x - y) * 0.5 + mx.abs(y))


def reduced_np(x, y):
    return np.mean(np.square(x - y) * np.float32(0.5) + np.abs(y))


def arithmetic_np(x, y):
    a = x * np.float32(1.5) + y
    b = a - x * np.float32(0.25)
    c = np.maximum(b, y) * a
    d = np.minimum(c, np.float32(4.0)) - b
    return d * d + np.float32(1.0)




def copy_ms(x, n, reps):
    """The time of a device-to-device copy of n float32: torch's copy_ when
    torch is installed, else Alloy's float32 -> int32 cast kernel (the same
    bytes read and written)."""
    try:
        import torch
        a = torch.empty(n, dtype=torch.float32, device="cuda")
        b = torch.empty_like(a)

        def run():
            b.copy_(a)
            torch.cuda.synchronize()
        return best_ms(run, reps), "torch copy_"
    except ImportError:
        return best_ms(lambda: mx.eval(x.astype(mx.int32)), reps), "cast kernel, torch absent"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1 << 26)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    ap.add_argument("--no-cache", action="store_true", help="cache no freed buffer (mx.set_cache_limit(0))")
    args = ap.parse_args()
    if args.no_cache:
        mx.set_cache_limit(0)
    gpu = args.device == "gpu"
    mx.set_default_device(mx.gpu if gpu else mx.cpu)
    reps = args.reps * 5 if gpu else args.reps
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal(args.n, dtype=np.float32)
    y_np = rng.standard_normal(args.n, dtype=np.float32)
    x, y = mx.array(x_np), mx.array(y_np)
    mx.eval(x, y)
    cases = [("arithmetic, 10 ops", arithmetic, arithmetic_np), ("transcendental, 10 ops", transcendental, None),
             ("4 ops + mean", reduced, reduced_np)]
    if gpu:
        t_copy, how = copy_ms(x, args.n, reps)
        copy_gbs = 2 * 4 * args.n / t_copy / 1e6
        print(f"device-to-device copy of {args.n >> 20}M float32 ({how}): {t_copy:.3f} ms, {copy_gbs:.0f} GB/s\n")
        print(f"| chain (GPU, {args.n >> 20}M float32) | uncompiled ms | compiled ms | speed-up | "
              "compiled GB/s | of copy bandwidth | same bits |")
        print("|---|---|---|---|---|---|---|")
    else:
        print(f"| chain (CPU, {args.n >> 20}M float32) | uncompiled ms | compiled ms | speed-up | numpy ms | same bits |")
        print("|---|---|---|---|---|---|")
    for name, f, f_np in cases:
        cf = mx.compile(f)
        same = np.array_equal(np.array(cf(x, y)), np.array(f(x, y)))
        t_u = best_ms(lambda: mx.eval(f(x, y)), reps)
        t_c = best_ms(lambda: mx.eval(cf(x, y)), reps)
        if gpu:
            moved = 4 * args.n * (3 if cf(x, y).size == args.n else 2)  # x and y read, the output written
            gbs = moved / t_c / 1e6
            print(f"| {name} | {t_u:.3f} | {t_c:.3f} | {t_u / t_c:.2f}x | {gbs:.0f} | {gbs / copy_gbs:.0%} | {same} |")
            continue
        t_np = f"{best_ms(lambda: f_np(x_np, y_np), args.reps):.0f}" if f_np else "-"
        print(f"| {name} | {t_u:.0f} | {t_c:.0f} | {t_u / t_c:.2f}x | {t_np} | {same} |")


if __name__ == "__main__":
    main()
