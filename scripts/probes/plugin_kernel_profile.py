"""Where alloy.mlx's grid_sample forward loses time against Alloy's own path
(issue 11), kernel by kernel: runs the seed's forward through Alloy's own
metal_kernel, through alloy.mlx on MLX's CUDA backend, and MLX's own
cuda_kernel with the hand-written CUDA, a few times each, on the data of
benchmarks/bench_mlx_plugin.py. Run it under Nsight Compute to read each
kernel's GPU time and instruction count, e.g.

  ncu --clock-control none --csv -k regex:grid_sample \
      --metrics gpu__time_duration.sum,smsp__inst_executed.sum,launch__registers_per_thread \
      python3 scripts/probes/plugin_kernel_profile.py

(with ALLOY_MLX_TOLERATE_READS=0 for the plugin's kernel without its read
clamp). Without ncu it prints each path's wall time per call.
`--summarize ncu.csv` prints the median of each metric per kernel name.
"""
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "examples" / "seeds"))
sys.path.insert(0, str(ROOT / "tests" / "mlx_plugin"))

import mlx.core as mx  # noqa: E402

import alloy.core as ax  # noqa: E402
import alloy.mlx  # noqa: E402,F401
from seeds import load  # noqa: E402

from bench_mlx_plugin import hand_forward  # noqa: E402


def forward_paths(per_eval=1):
    """The seed's forward on bench_mlx_plugin.py's data through each path, as
    {label: (build, evaluate)}: build() returns `per_eval` calls' outputs,
    not evaluated; evaluate(outputs) evaluates them (on the GPU where MLX
    has CUDA)."""
    seed_mlx = load("grid_sample")
    import grid_sample as seed_alloy
    rng = np.random.default_rng(0)
    B, H, W, C, gh, gw = 8, 64, 64, 32, 256, 256
    x = rng.standard_normal((B, H, W, C)).astype(np.float32)
    g = rng.uniform(-1, 1, (B, gh, gw, 2)).astype(np.float32)
    gpu = mx.cuda.is_available()
    if gpu:
        ax.set_default_device(ax.gpu)
        mx.set_default_device(mx.gpu)
    xm, gm = mx.array(x), mx.array(g)
    xa, ga = ax.array(x), ax.array(g)
    mx.eval(xm, gm)
    ax.eval(xa, ga)
    paths = {
        "alloy own": (lambda: [seed_alloy.grid_sample(xa, ga) for _ in range(per_eval)], ax.eval),
        "alloy.mlx": (lambda: [seed_mlx.grid_sample(xm, gm) for _ in range(per_eval)], mx.eval),
    }
    if gpu:
        mlx_hand = hand_forward(xm, gm)
        paths["mlx hand cuda"] = (lambda: [mlx_hand() for _ in range(per_eval)], mx.eval)
    return paths


def main():
    for name, (build, evaluate) in forward_paths().items():
        fn = lambda: evaluate(build())  # noqa: E731
        fn()
        t0 = time.perf_counter()
        for _ in range(5):
            fn()
        print(f"{name:14s} {(time.perf_counter() - t0) / 5 * 1e6:8.1f} us a call", flush=True)


def summarize(path):
    import csv
    import statistics
    from collections import defaultdict
    lines = pathlib.Path(path).read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    values = defaultdict(lambda: defaultdict(list))
    for r in csv.DictReader(lines[start:]):
        try:
            values[r["Kernel Name"][:60]][f'{r["Metric Name"]} ({r["Metric Unit"]})'].append(
                float(r["Metric Value"].replace(",", "")))
        except ValueError:
            pass
    for kernel, metrics in values.items():
        print(kernel)
        for m, v in sorted(metrics.items()):
            print(f"    {m:45s} median {statistics.median(v):14.1f}  ({len(v)} launches)")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--summarize":
        summarize(sys.argv[2])
    else:
        main()
