"""CPU ops of Alloy against mlx-cpu in one process, on the same data: the
strided (transposed) element loops, float16/bfloat16 work, sorts and
reductions. Prints each case's best-of-7 time on both and the ratio
alloy / mlx (below 1: Alloy is faster).

    python benchmarks/bench_cpu_ops_vs_mlx.py [case ...]
"""
import sys

import numpy as np

import alloy.core as ax
import mlx.core as mx
from timing import best_ms


# Each case: (core, x, h) -> array; x float32 2048x2048, h its float16 copy.
CASES = {
    "x.T + x (float32)": lambda m, x, h: x.T + x,
    "contiguous(x.T)": lambda m, x, h: m.contiguous(x.T),
    "concatenate([x, x.T])": lambda m, x, h: m.concatenate([x, x.T], axis=0),
    "x.astype(float16)": lambda m, x, h: x.astype(m.float16),
    "h.astype(float32)": lambda m, x, h: h.astype(m.float32),
    "h + h (float16)": lambda m, x, h: h + h,
    "exp(h) (float16)": lambda m, x, h: m.exp(h),
    "h * sigmoid(h) (float16)": lambda m, x, h: h * m.sigmoid(h),
    "sum(h, -1) (float16)": lambda m, x, h: m.sum(h, axis=-1),
    "softmax(h, -1) (float16)": lambda m, x, h: m.softmax(h, axis=-1),
    "sort(h, -1) (float16)": lambda m, x, h: m.sort(h, axis=-1),
    "sort(x, -1) (float32)": lambda m, x, h: m.sort(x, axis=-1),
    "argsort(x, -1) (float32)": lambda m, x, h: m.argsort(x, axis=-1),
}


def main():
    only = sys.argv[1:]
    data = np.random.default_rng(0).standard_normal((2048, 2048)).astype(np.float32)
    for core in (ax, mx):
        core.set_default_device(core.cpu)
    for name, case in CASES.items():
        if only and name not in only:
            continue
        times = {}
        for core in (ax, mx):
            x = core.array(data)
            h = x.astype(core.float16)
            core.eval(x, h)
            times[core] = best_ms(lambda: core.eval(case(core, x, h)), reps=7)
        print(f"| {name} | {times[ax]:.2f} ms | {times[mx]:.2f} ms | {times[ax] / times[mx]:.2f} |", flush=True)


if __name__ == "__main__":
    main()
