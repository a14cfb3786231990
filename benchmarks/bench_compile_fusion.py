"""mx.compile's elementwise fusion on the CPU (issue 16, item 3): chains of
10 elementwise ops, and 4 ops ending in a mean, over float32 arrays,
compiled (one fused node) against
uncompiled (one pass over memory per op) and numpy, same data, same process.
Also checks the compiled result equals the uncompiled one bit for bit.

Usage: python benchmarks/bench_compile_fusion.py [--n 67108864] [--reps 3]
"""
import argparse
import time

import numpy as np

import alloy.core as mx


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


def best_ms(fn, reps):
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return min(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1 << 26)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    mx.set_default_device(mx.cpu)
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal(args.n, dtype=np.float32)
    y_np = rng.standard_normal(args.n, dtype=np.float32)
    x, y = mx.array(x_np), mx.array(y_np)
    print(f"| chain (CPU, {args.n >> 20}M float32) | uncompiled ms | compiled ms | speed-up | numpy ms | same bits |")
    print("|---|---|---|---|---|---|")
    cases = [("arithmetic, 10 ops", arithmetic, arithmetic_np), ("transcendental, 10 ops", transcendental, None),
             ("4 ops + mean", reduced, reduced_np)]
    for name, f, f_np in cases:
        cf = mx.compile(f)
        same = np.array_equal(np.array(cf(x, y)), np.array(f(x, y)))
        t_u = best_ms(lambda: mx.eval(f(x, y)), args.reps)
        t_c = best_ms(lambda: mx.eval(cf(x, y)), args.reps)
        t_np = f"{best_ms(lambda: f_np(x_np, y_np), args.reps):.0f}" if f_np else "-"
        print(f"| {name} | {t_u:.0f} | {t_c:.0f} | {t_u / t_c:.2f}x | {t_np} | {same} |")


if __name__ == "__main__":
    main()
