"""float32 GEMM on the GPU (issue 16, item 4): Alloy's exact float32
default and its TF32 opt-in (`mx.set_float32_matmul_precision("high")`)
against PyTorch with TF32 off and on, same sizes, same process. Reports
TFLOP/s (2 N^3 per product) and alloy/torch time ratios, with each result's
max relative error against a float64 product of a corner.

Usage: python3 benchmarks/bench_matmul_gpu.py [--n 8192] [--reps 10]
"""
import argparse

import numpy as np

import alloy.core as mx
from timing import best_ms




def corner_error(c, a, b, rows=64):
    """Max |C - C_ref| / (|A||B|) over the first rows (float64 reference)."""
    a64, b64 = a[:rows].astype(np.float64), b.astype(np.float64)
    return float(np.max(np.abs(c[:rows] - a64 @ b64) / (np.abs(a64) @ np.abs(b64))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=8192)
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    n = args.n
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((n, n), dtype=np.float32)
    b_np = rng.standard_normal((n, n), dtype=np.float32)
    flops = 2.0 * n ** 3
    mx.set_default_device(mx.gpu)
    a, b = mx.array(a_np), mx.array(b_np)
    mx.eval(a, b)
    rows = []
    for precision in ("highest", "high"):
        mx.set_float32_matmul_precision(precision)
        t = best_ms(lambda: mx.eval(mx.matmul(a, b, stream=mx.gpu)), args.reps)
        err = corner_error(np.array(mx.matmul(a, b, stream=mx.gpu)), a_np, b_np)
        rows.append((f"alloy, precision {precision}", t, err))
    mx.set_float32_matmul_precision("highest")
    try:
        import torch
        ta, tb = torch.from_numpy(a_np).cuda(), torch.from_numpy(b_np).cuda()
        for tf32 in (False, True):
            torch.backends.cuda.matmul.allow_tf32 = tf32

            def run():
                torch.matmul(ta, tb)
                torch.cuda.synchronize()
            t = best_ms(run, args.reps)
            err = corner_error(torch.matmul(ta, tb).cpu().numpy(), a_np, b_np)
            rows.append((f"torch, allow_tf32={tf32}", t, err))
    except ImportError:
        pass
    print(f"| float32 GEMM {n}^3 | ms | TFLOP/s | max rel. error | alloy/torch (same precision) |")
    print("|---|---|---|---|---|")
    for i, (name, t, err) in enumerate(rows):
        peer = rows[i + 2][1] if name.startswith("alloy") and len(rows) == 4 else None
        ratio = f"{t / peer:.2f}" if peer else ""
        print(f"| {name} | {t:.3f} | {flops / t / 1e9:.0f} | {err:.1e} | {ratio} |")


if __name__ == "__main__":
    main()
