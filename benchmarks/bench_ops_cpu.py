"""CPU throughput of a handful of elementwise ops and reductions against numpy.

    PYTHONPATH=build-elem/pkg .venv/bin/python benchmarks/bench_ops_cpu.py [--sizes 1M,4M,16M] [--repeat 5]

Prints, per op and size, the best-of-N time of alloy (evaluated) and numpy and
the ratio alloy/numpy (below 1 means alloy is faster). Inputs are float32.
"""
import argparse
import time

import numpy as np

import alloy.core as mx

mx.set_default_device(mx.cpu)


def parse_size(s):
    s = s.strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20}.get(s[-1], 1)
    return int(s[:-1] if s[-1] in "KM" else s) * mult


def best_time(fn, repeat):
    fn()  # warm up (allocations, thread pool start)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def cases(n, rng):
    x = rng.uniform(0.5, 2.0, n).astype(np.float32)
    y = rng.uniform(0.5, 2.0, n).astype(np.float32)
    rows = 1024
    m = x.reshape(rows, -1)
    row_np = y[: m.shape[1]].copy()
    a, b, am, row = mx.array(x), mx.array(y), mx.array(m), mx.array(row_np)
    mx.eval(a, b, am, row)
    ev = mx.eval
    return [
        ("add", lambda: ev(a + b), lambda: x + y),
        ("multiply scalar", lambda: ev(a * 2.0), lambda: x * np.float32(2.0)),
        ("maximum", lambda: ev(mx.maximum(a, b)), lambda: np.maximum(x, y)),
        ("greater", lambda: ev(a > b), lambda: x > y),
        ("exp", lambda: ev(mx.exp(a)), lambda: np.exp(x)),
        ("log", lambda: ev(mx.log(a)), lambda: np.log(x)),
        ("tanh", lambda: ev(mx.tanh(a)), lambda: np.tanh(x)),
        ("where", lambda: ev(mx.where(a > b, a, b)), lambda: np.where(x > y, x, y)),
        ("sum (all)", lambda: ev(mx.sum(a)), lambda: np.sum(x)),
        ("sum last axis", lambda: ev(mx.sum(am, axis=1)), lambda: np.sum(m, axis=1)),
        ("sum first axis", lambda: ev(mx.sum(am, axis=0)), lambda: np.sum(m, axis=0)),
        ("max last axis", lambda: ev(mx.max(am, axis=1)), lambda: np.max(m, axis=1)),
        ("argmax last axis", lambda: ev(mx.argmax(am, axis=1)), lambda: np.argmax(m, axis=1)),
        ("cumsum last axis", lambda: ev(mx.cumsum(am, axis=1)), lambda: np.cumsum(m, axis=1)),
        ("matrix + row bcast", lambda: ev(am + row), lambda: m + row_np),
    ]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="1M,4M,16M")
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    rng = np.random.default_rng(0)
    print(f"{'op':<22}{'size':>8}{'alloy ms':>12}{'numpy ms':>12}{'ratio':>8}")
    for n in map(parse_size, args.sizes.split(",")):
        for name, f_alloy, f_numpy in cases(n, rng):
            ta = best_time(f_alloy, args.repeat)
            tn = best_time(f_numpy, args.repeat)
            print(f"{name:<22}{n >> 20:>7}M{ta * 1e3:>12.2f}{tn * 1e3:>12.2f}{ta / tn:>8.2f}")


if __name__ == "__main__":
    main()
