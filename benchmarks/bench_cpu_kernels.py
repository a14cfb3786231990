"""metal_kernel on the CPU, each figure beside its peers in the same run:

- the seed's grid_sample forward through mx.fast.metal_kernel vs the seed's
  grid_sample_ref written with our ops vs the same reference in numpy;
- the seed's grid_sample backward kernel (custom VJP) vs autodiff through
  grid_sample_ref;
- the seed's exp kernel vs numpy's exp;
- grid_sample_ref through real MLX's CPU backend (mlx[cpu]), when installed.

Usage: python benchmarks/bench_cpu_kernels.py [--quick]
"""
import argparse
import os
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples" / "seeds"))
import alloy.core as mx  # noqa: E402
from timing import median_ms  # noqa: E402




def grid_sample_numpy(x, grid):
    N, H, W, C = x.shape
    ix = ((grid[..., 0] + 1) * W - 1) / 2
    iy = ((grid[..., 1] + 1) * H - 1) / 2
    x0, y0 = np.floor(ix).astype(np.int32), np.floor(iy).astype(np.int32)
    out = np.zeros(grid.shape[:3] + (C,), np.float32)
    b = np.arange(N)[:, None, None]
    for dy in (0, 1):
        for dx in (0, 1):
            xi, yi = x0 + dx, y0 + dy
            w = (1 - np.abs(ix - xi)) * (1 - np.abs(iy - yi))
            ok = (xi >= 0) & (xi < W) & (yi >= 0) & (yi < H)
            out += (w * ok)[..., None] * x[b, np.clip(yi, 0, H - 1), np.clip(xi, 0, W - 1)]
    return out


def grid_sample_ref_with_mlx():
    """The seed's grid_sample_ref, the same source, run by real MLX (mlx[cpu]),
    or None when MLX is not installed."""
    try:
        import mlx.core  # noqa: F401
    except ImportError:
        return None
    import inspect

    import grid_sample as seed
    namespace = {}
    exec("import mlx.core as mx\n" + inspect.getsource(seed.grid_sample_ref), namespace)  # noqa: S102
    return namespace["grid_sample_ref"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    mx.set_default_device(mx.cpu)
    import exp_elementwise as seed_exp
    import grid_sample as seed

    rng = np.random.default_rng(0)
    B, H, W, C = (1, 64, 64, 32) if args.quick else (2, 256, 256, 64)
    gN, gM = (32, 32) if args.quick else (128, 128)
    x_np = rng.standard_normal((B, H, W, C), dtype=np.float32)
    g_np = (rng.random((B, gN, gM, 2), dtype=np.float32) * 2.2 - 1.1).astype(np.float32)
    cot_np = rng.standard_normal((B, gN, gM, C), dtype=np.float32)
    x, g, cot = mx.array(x_np), mx.array(g_np), mx.array(cot_np)

    rows = []
    t_kernel = median_ms(lambda: mx.eval(seed.grid_sample(x, g)))
    t_ref = median_ms(lambda: mx.eval(seed.grid_sample_ref(x, g)))
    t_np = median_ms(lambda: grid_sample_numpy(x_np, g_np))
    err = float(np.abs(np.array(seed.grid_sample(x, g)) - grid_sample_numpy(x_np, g_np)).max())
    rows.append(("grid_sample fwd: metal_kernel", t_kernel, ""))
    rows.append(("grid_sample fwd: grid_sample_ref (our ops)", t_ref, f"kernel is {t_ref / t_kernel:.1f}x faster"))
    rows.append(("grid_sample fwd: numpy", t_np, f"kernel is {t_np / t_kernel:.1f}x faster; max|diff|={err:.1e}"))
    ref_mlx = grid_sample_ref_with_mlx()
    if ref_mlx is not None:
        import mlx.core as mlx_core
        mlx_core.set_default_device(mlx_core.cpu)
        xm, gm = mlx_core.array(x_np), mlx_core.array(g_np)
        t_mlx = median_ms(lambda: mlx_core.eval(ref_mlx(xm, gm)))
        ours, theirs = np.array(seed.grid_sample_ref(x, g)), np.array(ref_mlx(xm, gm))
        # The reference gathers corners outside x before masking them: MLX
        # reads whatever lies there (NaN * 0 is NaN), Alloy clamps the index.
        finite = np.isfinite(theirs)
        diff = float(np.abs(ours[finite] - theirs[finite]).max())
        rows.append(("grid_sample fwd: grid_sample_ref (mlx-cpu)", t_mlx,
                     f"ours/mlx = {t_ref / t_mlx:.2f}; max|diff|={diff:.1e} where MLX's is finite "
                     f"({int((~finite).sum())} of {theirs.size} are not)"))

    # The VJP kernel alone (it synchronises: simd_sum) under each CPU thread
    # model: split into regions (the default), coroutines, fibers.
    vjp_kernel = lambda: mx.eval(mx.vjp(seed.grid_sample, [x, g], [cot])[1])
    t_mode = {}
    for mode in ("auto", "coroutines", "fibers"):
        os.environ["ALLOY_CPU_SYNC"] = mode
        t_mode[mode] = median_ms(vjp_kernel, reps=3)
    os.environ["ALLOY_CPU_SYNC"] = "auto"
    # Its atomic outputs it only adds to: a copy per worker (the default)
    # against compare-and-swap loops on the outputs themselves.
    os.environ["ALLOY_CPU_PRIVATE_ADDS"] = "0"
    t_atomic = median_ms(vjp_kernel, reps=5)
    os.environ.pop("ALLOY_CPU_PRIVATE_ADDS")
    t_private = median_ms(vjp_kernel, reps=5)
    rows.append(("grid_sample VJP kernel alone: regions (default)", t_mode["auto"], ""))
    rows.append(("grid_sample VJP kernel alone: copies per worker (default), again", t_private, ""))
    rows.append(("grid_sample VJP kernel alone: ALLOY_CPU_PRIVATE_ADDS=0 (atomic adds)", t_atomic,
                 f"copies are {t_atomic / t_private:.2f}x faster"))
    rows.append(("grid_sample VJP kernel alone: ALLOY_CPU_SYNC=coroutines", t_mode["coroutines"],
                 f"regions are {t_mode['coroutines'] / t_mode['auto']:.2f}x faster"))
    rows.append(("grid_sample VJP kernel alone: ALLOY_CPU_SYNC=fibers", t_mode["fibers"],
                 f"regions are {t_mode['fibers'] / t_mode['auto']:.2f}x faster"))

    loss_k = lambda x, g: mx.sum(seed.grid_sample(x, g) * cot)
    # d/dx (mx.grad's default): through the reference d/dgrid is refused, as by
    # MLX (it gathers at indices computed from the grid).
    loss_r = lambda x, g: mx.sum(seed.grid_sample_ref(x, g) * cot)
    t_gk = median_ms(lambda: mx.eval(mx.grad(loss_k)(x, g)), reps=3)
    t_gr = median_ms(lambda: mx.eval(mx.grad(loss_r)(x, g)), reps=3)
    rows.append(("grid_sample grad: custom VJP kernel", t_gk, ""))
    rows.append(("grid_sample grad: autodiff of grid_sample_ref", t_gr, f"kernel is {t_gr / t_gk:.1f}x faster"))

    n = 1 << (20 if args.quick else 24)
    a_np = rng.standard_normal(n, dtype=np.float32)
    a = mx.array(a_np)
    t_exp = median_ms(lambda: mx.eval(seed_exp.exp_elementwise(a)))
    t_npexp = median_ms(lambda: np.exp(a_np))
    rows.append((f"exp {n >> 20}M float32: metal_kernel", t_exp, ""))
    rows.append((f"exp {n >> 20}M float32: numpy", t_npexp, f"kernel/numpy = {t_exp / t_npexp:.2f}"))

    print(f"| benchmark (CPU, x {x_np.shape}, grid {g_np.shape}) | ms | note |\n|---|---|---|")
    for name, ms, note in rows:
        print(f"| {name} | {ms:.2f} | {note} |")


if __name__ == "__main__":
    main()
