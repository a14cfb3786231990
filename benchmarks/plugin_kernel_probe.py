"""The seed's grid_sample forward kernel through alloy.mlx and through
Alloy's own path, launched a few times each, for a profiler (ncu) to time
the kernels alone: is the plugin's gap (benchmarks/bench_mlx_plugin.py) in
the GPU's work or around it? Usage: ncu --kernel-name regex:grid_sample
--metrics gpu__time_duration.sum python3 benchmarks/plugin_kernel_probe.py
"""
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "mlx_plugin"))
sys.path.insert(0, str(ROOT / "examples" / "seeds"))

import mlx.core as mx  # noqa: E402

import alloy.core as ax  # noqa: E402
import alloy.mlx  # noqa: E402,F401
from seeds import load  # noqa: E402

seed_mlx = load("grid_sample")
import grid_sample as seed_alloy  # noqa: E402

rng = np.random.default_rng(0)
B, H, W, C, gh, gw = 8, 64, 64, 32, 256, 256
x = rng.standard_normal((B, H, W, C)).astype(np.float32)
g = rng.uniform(-1, 1, (B, gh, gw, 2)).astype(np.float32)
mx.set_default_device(mx.gpu)
ax.set_default_device(ax.gpu)
xm, gm = mx.array(x), mx.array(g)
xa, ga = ax.array(x), ax.array(g)
for _ in range(3):
    mx.eval([seed_mlx.grid_sample(xm, gm) for _ in range(3)])
    ax.eval([seed_alloy.grid_sample(xa, ga) for _ in range(3)])
print("done")
