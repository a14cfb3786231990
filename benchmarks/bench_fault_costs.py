"""What issue 14's safety costs, each figure against its own baseline in the
same run on one device:

- bounds checks (compile_options={"bounds_check": True}) on the seed's
  grid_sample forward kernel (examples/seeds/grid_sample.py, as written),
  against the same kernel unchecked; samples stay inside the image, where
  the seed's corner loads stay inside `x`;
- the GPU's cancellation poll in an unbounded `while` loop (the translation
  adds it to every loop without a counted bound), against the same loop as a
  hand-written CUDA body (mx.fast.cuda_kernel, which has no poll). The seed
  kernels have no such loop, so they pay nothing.

Usage: python3 benchmarks/bench_fault_costs.py cpu|gpu [--out table.md]
"""
import argparse
import os
import pathlib
import statistics
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples" / "seeds"))

import alloy.core as mx  # noqa: E402


def median_ms(make, reps=11, batch=5):
    mx.eval(make())
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        mx.eval([make() for _ in range(batch)])
        times.append((time.perf_counter() - t0) * 1e3 / batch)
    return statistics.median(times)


def grid_sample_cost(rows, small):
    import grid_sample as seed
    rng = np.random.default_rng(0)
    shape = (2, 64, 64, 32) if small else (8, 256, 256, 64)
    x = mx.array(rng.standard_normal(shape).astype(np.float32))
    g = mx.array((rng.random((shape[0], shape[1], shape[2], 2)) * 1.8 - 0.9).astype(np.float32))
    times = {}
    for checked in ("0", "1"):
        os.environ["ALLOY_BOUNDS_CHECK"] = checked  # read when the seed defines its kernel
        times[checked] = median_ms(lambda: seed.grid_sample(x, g))
    os.environ["ALLOY_BOUNDS_CHECK"] = "0"
    rows.append((f"seed grid_sample forward {shape}, bounds_check on", times["1"], "unchecked", times["0"]))


SPIN_METAL = """
    uint i = thread_position_in_grid.x;
    float v = a[i];
    uint k = 0;
    while (k < n) { v = v * 0.999f + 0.5f; ++k; }
    out[i] = v;
"""
SPIN_CUDA = """
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a_shape[0]) return;
    float v = a[i];
    unsigned k = 0;
    while (k < n) { v = v * 0.999f + 0.5f; ++k; }
    out[i] = v;
"""


def poll_cost(rows, small):
    size, iters = (1 << 16, 1 << 12) if small else (1 << 20, 1 << 14)
    a = mx.array(np.random.default_rng(1).standard_normal(size).astype(np.float32))
    kw = dict(inputs=[a], grid=(size, 1, 1), threadgroup=(256, 1, 1), output_shapes=[(size,)],
              output_dtypes=[mx.float32], template=[("n", iters)])
    metal = mx.fast.metal_kernel(name="spin_poll", input_names=["a"], output_names=["out"], source=SPIN_METAL,
                                 compile_options={"bounds_check": False})
    cuda = mx.fast.cuda_kernel(name="spin_plain", input_names=["a"], output_names=["out"], source=SPIN_CUDA)
    t_metal = median_ms(lambda: metal(**kw)[0])
    t_cuda = median_ms(lambda: cuda(**kw)[0])
    rows.append((f"while loop, {iters} iterations x {size} threads, polled", t_metal, "cuda_kernel, no poll", t_cuda))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("device", choices=["cpu", "gpu"])
    ap.add_argument("--out")
    ap.add_argument("--small", action="store_true", help="smaller sizes (the 2-core CPU)")
    args = ap.parse_args()
    mx.set_default_device(getattr(mx, args.device))
    rows = []
    grid_sample_cost(rows, args.small)
    if args.device == "gpu":
        poll_cost(rows, args.small)
    lines = ["| what | alloy | baseline | baseline time | ratio |", "|---|---|---|---|---|"]
    for what, t, peer, tp in rows:
        lines.append(f"| {what} | {t:.3f} ms | {peer} | {tp:.3f} ms | {t / tp:.3f}x |")
        print(f"{what}: {t:.3f} ms vs {peer} {tp:.3f} ms = {t / tp:.3f}x", flush=True)
    if args.out:
        pathlib.Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
