"""Where the host time of a tiny custom-kernel call goes, on the GPU.

Breaks a metal_kernel / cuda_kernel call into building the lazy node (no
eval), evaluating pre-built nodes (launches), and a call with its own eval,
next to a CuPy RawKernel launch and a torch tiny op from the same process.
Usage: python benchmarks/host_cost_gpu.py
"""
import time

import numpy as np

import alloy.core as mx


def per_call_us(fn, n=5000, reps=5):
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n * 1e6)
    return best


def breakdown(label, call):
    # Warm the whole path (allocator buckets, caches, CPU clocks) before
    # timing, so the first row is not penalised for running first.
    for _ in range(2000):
        mx.eval(call())
    n = 5000
    best_build = best_eval = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        outs = [call() for _ in range(n)]
        t1 = time.perf_counter()
        mx.eval(outs)  # waits for the GPU
        t2 = time.perf_counter()
        del outs
        best_build = min(best_build, (t1 - t0) / n * 1e6)
        best_eval = min(best_eval, (t2 - t1) / n * 1e6)
    own = per_call_us(lambda: mx.eval(call()))
    print(f"| {label} | build {best_build:.2f} | eval {best_eval:.2f} | build+eval {best_build + best_eval:.2f} "
          f"| call+own eval {own:.2f} |")


def main():
    mx.set_default_device(mx.gpu)
    tiny = mx.array(np.ones(16, np.float32))
    k = mx.fast.metal_kernel(name="tiny", input_names=["inp"], output_names=["out"],
                             source="uint i = thread_position_in_grid.x; out[i] = inp[i] + 1.0f;")
    c = mx.fast.cuda_kernel(name="tiny_cuda", input_names=["inp"], output_names=["out"],
                            source="int i = threadIdx.x; out[i] = inp[i] + 1.0f;")
    calls = {
        "metal_kernel": lambda: k(inputs=[tiny], grid=(16, 1, 1), threadgroup=(16, 1, 1),
                                  output_shapes=[(16,)], output_dtypes=[mx.float32])[0],
        "cuda_kernel": lambda: c(inputs=[tiny], grid=(16, 1, 1), threadgroup=(16, 1, 1),
                                 output_shapes=[(16,)], output_dtypes=[mx.float32])[0],
        "tiny + 1 (op)": lambda: tiny + 1.0,
        "tiny + tiny (op)": lambda: tiny + tiny,
    }
    # A second of calls first, so the first row measured does not pay for
    # the CPU's clock ramping up after whatever ran before this script.
    t_end = time.perf_counter() + 1.0
    while time.perf_counter() < t_end:
        for call in calls.values():
            mx.eval(call())
    for label, call in calls.items():
        breakdown(label, call)
    try:
        import cupy as cp
        raw = cp.RawKernel(r'extern "C" __global__ void k(const float* a, float* b) '
                           r'{ int i = threadIdx.x; b[i] = a[i] + 1.0f; }', "k")
        a = cp.ones(16, cp.float32)
        b = cp.empty_like(a)
        raw((1,), (16,), (a, b))
        cp.cuda.Device().synchronize()
        print(f"| cupy RawKernel launch (preallocated out) | {per_call_us(lambda: raw((1,), (16,), (a, b))):.2f} us |")
        # The driver's own cost: cuLaunchKernel with ready-made arguments.
        import ctypes
        from cupy.cuda import driver
        ptrs = (ctypes.c_uint64 * 2)(a.data.ptr, b.data.ptr)
        params = (ctypes.c_void_p * 2)(ctypes.addressof(ptrs), ctypes.addressof(ptrs) + 8)
        fptr, pptr = raw.kernel.ptr, ctypes.addressof(params)
        launch = lambda: driver.launchKernel(fptr, 1, 1, 1, 16, 1, 1, 0, 0, pptr, 0)
        print(f"| cuLaunchKernel alone (from Python, ~0.2 us of call) | {per_call_us(launch):.2f} us |")
        stream_sync = cp.cuda.Stream.null.synchronize
        print(f"| cuLaunchKernel + stream synchronize | {per_call_us(lambda: (launch(), stream_sync())):.2f} us |")
        null = cp.cuda.Stream.null

        def launch_spin():
            launch()
            while not null.done:
                pass
        print(f"| cuLaunchKernel + spin on stream query | {per_call_us(launch_spin):.2f} us |")
        print(f"| cupy RawKernel launch + synchronize | "
              f"{per_call_us(lambda: (raw((1,), (16,), (a, b)), stream_sync())):.2f} us |")
        cp.cuda.Device().synchronize()
        print(f"| cupy RawKernel launch + empty_like | "
              f"{per_call_us(lambda: raw((1,), (16,), (a, cp.empty_like(a)))):.2f} us |")
        cp.cuda.Device().synchronize()
    except Exception as e:  # noqa: BLE001 - report and go on
        print("cupy:", e)
    try:
        import torch
        t = torch.ones(16, device="cuda")
        torch.cuda.synchronize()
        print(f"| torch tiny add | {per_call_us(lambda: t + 1.0):.2f} us |")
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001
        print("torch:", e)


if __name__ == "__main__":
    main()
