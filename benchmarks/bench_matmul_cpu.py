"""matmul on the CPU: alloy vs numpy (both on OpenBLAS for float32/float64).

One run per case after one warm-up; prints milliseconds and the ratio
alloy/numpy (lower is better for alloy). Usage:
    PYTHONPATH=build-shape/pkg .venv/bin/python benchmarks/bench_matmul_cpu.py
"""
import time

import numpy as np

import alloy.core as mx

mx.set_default_device(mx.cpu)

CASES = [
    ("float32", (512, 512), (512, 512)),
    ("float32", (1024, 1024), (1024, 1024)),
    ("float32", (64, 128, 128), (64, 128, 128)),
    ("float32", (1024, 1024), (1024, 1024), "transposed B"),
    ("float64", (512, 512), (512, 512)),
    ("float16", (512, 512), (512, 512)),
    ("int32", (256, 256), (256, 256)),
]


def timed(fn, repeats=3):
    fn()  # warm-up
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best * 1e3


def main():
    rng = np.random.default_rng(0)
    print(f"{'case':44s} {'alloy ms':>10s} {'numpy ms':>10s} {'ratio':>7s}")
    for case in CASES:
        dtype, sa, sb = case[:3]
        note = case[3] if len(case) > 3 else ""
        if dtype.startswith("int"):
            x = rng.integers(0, 10, sa).astype(dtype)
            y = rng.integers(0, 10, sb).astype(dtype)
        else:
            x = rng.standard_normal(sa).astype(dtype)
            y = rng.standard_normal(sb).astype(dtype)
        if note == "transposed B":
            y = np.ascontiguousarray(y.T).T
        a, b = mx.array(x), mx.array(y) if note != "transposed B" else mx.array(np.ascontiguousarray(y.T)).T
        mx.eval(a, b)
        t_alloy = timed(lambda: mx.eval(a @ b))
        t_numpy = timed(lambda: x @ y)
        label = f"{dtype} {sa} @ {sb} {note}"
        print(f"{label:44s} {t_alloy:10.2f} {t_numpy:10.2f} {t_alloy / t_numpy:7.2f}")


if __name__ == "__main__":
    main()
