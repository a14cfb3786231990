"""Where alloy.mlx's time goes around the seed's grid_sample forward, against
Alloy's own path, same process, same data (issue 11's 1.10x target).

For n kernels per eval (n in --counts) it times three phases of each eval:
building the n calls on the host, enqueueing them (`async_eval` returns),
and waiting for the results. A straight line through the total per eval
against n splits each path's cost into a per-kernel slope (the GPU's time per
kernel, if the host keeps ahead) and a fixed part per eval (host work before
the first kernel starts, and the wait at the end).

Usage: python3 benchmarks/plugin_overhead_probe.py [--cpu] [--counts 1,5,10,20] [--paths plugin,alloy]
(one path, few counts, under ncu: each kernel's own GPU time on either path).
Knobs of the plugin to compare in separate runs: MLX_USE_CUDA_GRAPHS=0 (MLX's
own), ALLOY_MLX_LAUNCH=graph (a large kernel as a one-node graph rather than
launched on MLX's stream), ALLOY_MLX_COMMIT_THREADS=N (alloy.mlx commits MLX's graph after a
kernel of at least N threads; docs/design/mlx-plugin.md).
"""
import argparse
import os
import pathlib
import statistics
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "mlx_plugin"))
sys.path.insert(0, str(ROOT / "examples" / "seeds"))

import mlx.core as mx  # noqa: E402

import alloy.core as ax  # noqa: E402
import alloy.mlx  # noqa: E402,F401
from seeds import load  # noqa: E402


def phases(fw, call, n, repeat):
    """Median (build, enqueue, wait, total) seconds per eval of n calls."""
    rows = []
    for i in range(repeat + 2):
        t0 = time.perf_counter()
        outs = [call() for _ in range(n)]
        t1 = time.perf_counter()
        fw.async_eval(outs)
        t2 = time.perf_counter()
        fw.eval(outs)
        t3 = time.perf_counter()
        if i >= 2:
            rows.append((t1 - t0, t2 - t1, t3 - t2, t3 - t0))
    return [statistics.median(c) for c in zip(*rows)]


def fit(ns, totals):
    slope, intercept = np.polyfit(np.array(ns, float), np.array(totals, float), 1)
    return slope, intercept


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cpu", action="store_true")
    p.add_argument("--counts", default="1,5,10,20")
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--paths", default="plugin,alloy")
    a = p.parse_args()
    counts = [int(c) for c in a.counts.split(",")]
    knobs = {k: v for k, v in os.environ.items() if k in ("MLX_USE_CUDA_GRAPHS", "ALLOY_MLX_COMMIT_THREADS", "ALLOY_MLX_LAUNCH")}
    seed_mlx = load("grid_sample")
    import grid_sample as seed_alloy
    if not a.cpu:
        mx.set_default_device(mx.gpu)
        ax.set_default_device(ax.gpu)
    print(f"mlx {mx.__version__} on {mx.default_device()}, knobs {knobs or 'none'}")
    rng = np.random.default_rng(0)
    B, H, W, C, gh, gw = 8, 64, 64, 32, 256, 256
    x = rng.standard_normal((B, H, W, C)).astype(np.float32)
    g = rng.uniform(-1, 1, (B, gh, gw, 2)).astype(np.float32)
    xm, gm, xa, ga = mx.array(x), mx.array(g), ax.array(x), ax.array(g)
    mx.eval(xm, gm)
    ax.eval(xa, ga)
    if "," in a.paths:  # (one path alone: only its own kernels run, for ncu)
        np.testing.assert_allclose(np.array(seed_mlx.grid_sample(xm, gm)), np.array(seed_alloy.grid_sample(xa, ga)),
                                   rtol=1e-6, atol=1e-6)
    paths = {"plugin": (mx, lambda: seed_mlx.grid_sample(xm, gm)), "alloy": (ax, lambda: seed_alloy.grid_sample(xa, ga))}
    paths = {k: paths[k] for k in a.paths.split(",")}
    totals = {k: [] for k in paths}
    print(f"{'n':>3} {'path':7} {'build us':>9} {'enqueue us':>10} {'wait us':>9} {'per call us':>11}")
    for n in counts:
        for name, (fw, call) in paths.items():
            b, e, w, t = phases(fw, call, n, a.repeat)
            totals[name].append(t)
            print(f"{n:3d} {name:7} {b * 1e6:9.1f} {e * 1e6:10.1f} {w * 1e6:9.1f} {t / n * 1e6:11.1f}", flush=True)
        if len(paths) == 2:
            print(f"    ratio plugin/alloy at n={n}: {totals['plugin'][-1] / totals['alloy'][-1]:.3f}")
    for name in paths if len(counts) > 1 else ():
        s, i = fit(counts, totals[name])
        print(f"{name:7} per kernel {s * 1e6:8.1f} us, fixed per eval {i * 1e6:8.1f} us")


if __name__ == "__main__":
    main()
