"""Where a GPU program's first matmul spends its time, below Alloy: the CUDA
driver and cuBLAS called through ctypes in a fresh process (issue 17's cold
start). Prints milliseconds per step:

  cuInit, the primary context, loading libcublas, cublasCreate, the first
  512x1024 @ 1024x512 SGEMM (with its wait), and a second one.

`--overlap` loads libcublas on a thread while the context is created, as
Alloy does. `--tiny-first` runs an 8x8x8 SGEMM before the first real one:
how much of the first GEMM's cost is cuBLAS's start-up rather than the
kernel that shape needs (what a warm-up on a background thread could hide).
`--lt-heuristic-first` asks cuBLASLt for an algorithm for the same shape
before the first SGEMM (host work only, nothing enqueued).
`--lt-heuristic-beside-context` asks it on a thread started right after
cuInit, while the main thread creates the primary context: whether the
planner's first answer needs the context or can hide behind its creation
(the thread's own time is printed as well). Each SGEMM is
timed in two steps: the call (host: planning, module loading, the launch)
and the wait for the GPU.

Usage: python3 benchmarks/cold_start_parts.py [--overlap] [--tiny-first] [--lt-heuristic-first]
                                              [--lt-heuristic-beside-context] [--json]
"""
import ctypes
import ctypes.util
import json
import os
import sys
import threading
import time


def load_cublas():
    for name in ("libcublas.so.13", "libcublas.so.12", "libcublas.so"):
        try:
            return ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
        except OSError:
            pass
    for home in (os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"):
        for name in ("libcublas.so.13", "libcublas.so.12"):
            path = os.path.join(home, "lib64", name)
            if os.path.exists(path):
                return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    raise SystemExit("libcublas not found")


def lt_heuristic(m, n, k):
    """cublasLtMatmulAlgoGetHeuristic for row-major (m x k) @ (k x n) in float32."""
    lt = None
    for name in ("libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"):
        try:
            lt = ctypes.CDLL(name)
            break
        except OSError:
            pass
    assert lt is not None, "libcublasLt not found"
    handle, desc, pref = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    assert lt.cublasLtCreate(ctypes.byref(handle)) == 0
    compute_32f, r_32f = 68, 0  # CUBLAS_COMPUTE_32F, CUDA_R_32F
    assert lt.cublasLtMatmulDescCreate(ctypes.byref(desc), compute_32f, r_32f) == 0
    layouts = []
    for rows, cols in ((n, k), (k, m), (n, m)):  # column-major B, A, C as in the SGEMM below
        lay = ctypes.c_void_p()
        assert lt.cublasLtMatrixLayoutCreate(ctypes.byref(lay), r_32f, ctypes.c_uint64(rows), ctypes.c_uint64(cols),
                                             ctypes.c_int64(rows)) == 0
        layouts.append(lay)
    assert lt.cublasLtMatmulPreferenceCreate(ctypes.byref(pref)) == 0
    results = ctypes.create_string_buffer(256)  # one cublasLtMatmulHeuristicResult_t (96 bytes)
    count = ctypes.c_int()
    st = lt.cublasLtMatmulAlgoGetHeuristic(handle, desc, layouts[0], layouts[1], layouts[2], layouts[2], pref, 1,
                                           results, ctypes.byref(count))
    assert st == 0 and count.value >= 1, (st, count.value)


def main():
    overlap = "--overlap" in sys.argv
    steps = {}
    t = time.perf_counter()

    def mark(name):
        nonlocal t
        now = time.perf_counter()
        steps[name] = round((now - t) * 1e3, 2)
        t = now

    box = {}
    loader = None
    if overlap:
        loader = threading.Thread(target=lambda: box.setdefault("cublas", load_cublas()))
        loader.start()
    cuda = ctypes.CDLL("libcuda.so.1")
    assert cuda.cuInit(0) == 0
    mark("cuInit")
    planner = None
    if "--lt-heuristic-beside-context" in sys.argv:
        def plan():
            start = time.perf_counter()
            lt_heuristic(512, 512, 1024)
            box["planner ms"] = round((time.perf_counter() - start) * 1e3, 2)
        planner = threading.Thread(target=plan)
        planner.start()
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    assert cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
    assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
    assert cuda.cuCtxSetCurrent(ctx) == 0
    mark("primary context")
    if planner:
        planner.join()
        mark("cuBLASLt heuristic beside the context (join)")
    if loader:
        loader.join()
        cublas = box["cublas"]
        mark("libcublas (after the context, overlapped)")
    else:
        cublas = load_cublas()
        mark("libcublas")
    handle = ctypes.c_void_p()
    assert cublas.cublasCreate_v2(ctypes.byref(handle)) == 0
    mark("cublasCreate")
    m, n, k = 512, 512, 1024
    ptrs = []
    for count in (m * k, k * n, m * n):
        p = ctypes.c_uint64()
        assert cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(count * 4)) == 0
        ptrs.append(p)
    mark("3 allocations")
    if "--lt-heuristic-first" in sys.argv:
        lt_heuristic(m, n, k)
        mark("cuBLASLt heuristic for that shape")
    one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
    shapes = [("first SGEMM", n, m, k), ("second SGEMM", n, m, k)]
    if "--tiny-first" in sys.argv:
        shapes.insert(0, ("tiny 8x8x8 SGEMM", 8, 8, 8))
    for name, gn, gm, gk in shapes:
        # Column-major C (n x m) = B (n x k) A (k x m): row-major A @ B.
        st = cublas.cublasSgemm_v2(handle, 0, 0, gn, gm, gk, ctypes.byref(one), ctypes.c_uint64(ptrs[1].value), gn,
                                   ctypes.c_uint64(ptrs[0].value), gk, ctypes.byref(zero),
                                   ctypes.c_uint64(ptrs[2].value), gn)
        assert st == 0, st
        mark(name + " (call)")
        assert cuda.cuCtxSynchronize() == 0
        mark(name + " (wait)")
    steps["total"] = round(sum(v for key, v in steps.items()), 2)
    if "planner ms" in box:
        steps["(planner thread alone)"] = box["planner ms"]
    print(json.dumps(steps) if "--json" in sys.argv else "\n".join(f"{k:45s} {v:8.2f} ms" for k, v in steps.items()))


if __name__ == "__main__":
    main()
