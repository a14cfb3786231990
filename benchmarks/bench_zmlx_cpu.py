"""ZMLX's Metal kernels on MLX's CPU backend through alloy.mlx (issue 16,
item 5): its group reductions are a macro of its header
(`KK_SIMD_REDUCE_SUM`: simd_sum, then barriers in a loop), which the CPU
now expands at its calls so that the threads run as regions
(msl/cpu_inline_macros.h); before, they ran on fibers. Each kernel is timed
with ALLOY_CPU_SYNC=auto (regions) and =fibers (as before), beside MLX's
own op on the same data, in one process.

  python benchmarks/bench_zmlx_cpu.py [--reps 7] [--rows 256] [--dim 4096]
"""
import argparse
import os
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from timing import median_ms  # noqa: E402

import mlx.core as mx  # noqa: E402

import alloy.mlx  # noqa: E402,F401
from zmlx.kernels import norms, reductions, softmax  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--rows", type=int, default=256)
    ap.add_argument("--dim", type=int, default=4096)
    args = ap.parse_args()
    mx.set_default_device(mx.cpu)
    rng = np.random.default_rng(0)
    x = mx.array(rng.standard_normal((args.rows, args.dim)).astype(np.float32))
    w = mx.array(rng.standard_normal(args.dim).astype(np.float32))
    b = mx.array(rng.standard_normal(args.dim).astype(np.float32))
    cases = [
        ("rmsnorm", lambda: norms.rmsnorm(x, w, eps=1e-6), lambda: mx.fast.rms_norm(x, w, 1e-6)),
        ("layernorm", lambda: norms.layernorm(x, w, b, eps=1e-5), lambda: mx.fast.layer_norm(x, w, b, 1e-5)),
        ("softmax_lastdim", lambda: softmax.softmax_lastdim(x), lambda: mx.softmax(x, axis=-1)),
        ("sum_lastdim", lambda: reductions.sum_lastdim(x), lambda: mx.sum(x, axis=-1)),
    ]
    print(f"| ZMLX kernel ({args.rows} x {args.dim} float32, MLX CPU + alloy.mlx) | regions (auto) | fibers (before) "
          "| fibers / regions | MLX's own op | regions / MLX |\n|---|---|---|---|---|---|")
    for name, kernel, ops in cases:
        times = {}
        for mode in ("auto", "fibers"):
            os.environ["ALLOY_CPU_SYNC"] = mode
            out = kernel()
            mx.eval(out)  # compiled before timing
            err = float(mx.abs(out.reshape(-1) - ops().reshape(-1)).max())
            times[mode] = median_ms(lambda: mx.eval(kernel()), reps=args.reps)
        os.environ["ALLOY_CPU_SYNC"] = "auto"
        t_ops = median_ms(lambda: mx.eval(ops()), reps=args.reps)
        print(f"| {name} (max diff {err:.1e}) | {times['auto']:.2f} ms | {times['fibers']:.2f} ms "
              f"| {times['fibers'] / times['auto']:.1f}x | {t_ops:.2f} ms | {times['auto'] / t_ops:.2f}x |")


if __name__ == "__main__":
    main()
