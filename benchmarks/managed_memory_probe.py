"""Does managed (unified) memory slow the seed's grid_sample forward on the
GPU? MLX's CUDA backend gives a custom primitive's outputs (alloy.mlx's
too) managed memory, Alloy's own path device memory (issue 11: the plugin's
grid_sample is 1.2x Alloy's own). The hand-written CUDA kernel
(benchmarks/cuda/grid_sample.cu) through CuPy, the plugin benchmark's shapes
(B=8, 64x64x32 sampled at 256x256), inputs and output in device memory, in
managed memory, and in managed memory freshly allocated for every launch.
Times: median of 9 rounds of `batch` launches and one wait, per launch.

Usage: python3 benchmarks/managed_memory_probe.py
"""
import pathlib
import sys

import cupy as cp
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from timing import median_ms  # noqa: E402


def managed(shape, dtype):
    n = int(np.prod(shape)) * np.dtype(dtype).itemsize
    return cp.ndarray(shape, dtype, memptr=cp.cuda.malloc_managed(n))


def per_launch_ms(fn, batch):
    def round_():
        for _ in range(batch):
            fn()
        cp.cuda.runtime.deviceSynchronize()
    return median_ms(round_, reps=9) / batch


def main():
    rng = np.random.default_rng(0)
    B, H, W, C, gh, gw = 8, 64, 64, 32, 256, 256
    x_np = rng.standard_normal((B, H, W, C), dtype=np.float32)
    g_np = (rng.random((B, gh, gw, 2), dtype=np.float32) * 2.2 - 1.1).astype(np.float32)
    mod = cp.RawModule(code=(ROOT / "benchmarks" / "cuda" / "grid_sample.cu").read_text(), options=("-arch=sm_90",))
    fwd = mod.get_function("grid_sample_fwd")
    total = B * gh * gw * C

    def launcher(x, g, out_of):
        def run():
            fwd(((total + 255) // 256,), (256,), (x, g, out_of(), np.int32(H), np.int32(W), np.int32(C),
                                                   np.int32(gh), np.int32(gw), np.uint32(total)))
        return run

    dx, dg = cp.asarray(x_np), cp.asarray(g_np)
    dout = cp.empty((B, gh, gw, C), cp.float32)
    mx_, mg = managed(x_np.shape, np.float32), managed(g_np.shape, np.float32)
    mx_[...] = dx
    mg[...] = dg
    mout = managed((B, gh, gw, C), np.float32)
    cases = {
        "device memory": launcher(dx, dg, lambda: dout),
        "managed memory": launcher(mx_, mg, lambda: mout),
        "managed memory, a new output per launch": launcher(mx_, mg, lambda: managed((B, gh, gw, C), np.float32)),
    }
    want = None
    for name, run in cases.items():
        run()
        cp.cuda.runtime.deviceSynchronize()
        got = cp.asnumpy(dout if name == "device memory" else mout)
        if want is None:
            want = got
        for batch in (1, 10):
            ms = per_launch_ms(run, batch)
            print(f"{name:42s} {batch:2d} per wait: {ms * 1e3:8.1f} us", flush=True)
    print("outputs agree:", bool(np.array_equal(want, cp.asnumpy(mout))))


if __name__ == "__main__":
    main()
