"""GPU benchmarks (run by scripts/gpu_check.sh on the H100), each figure next
to its peer measured in the same run:

- the seed's grid_sample forward/backward through mx.fast.metal_kernel (the
  seed's Metal source verbatim, examples/seeds/grid_sample.py) vs the same
  algorithm hand-written in CUDA (benchmarks/cuda/grid_sample.cu via CuPy) vs
  PyTorch's grid_sample;
- the seed's exp kernel on 1 GiB vs torch.exp and a device-to-device copy;
- host cost of a metal_kernel call; first compile and disk-cache load.

Usage: python3 benchmarks/bench_gpu.py [--out table.md] [--quick]
"""
import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples" / "seeds"))

import alloy.core as mx  # noqa: E402

rows = []


def row(what, alloy_ms, peer_name, peer_ms, note=""):
    ratio = (alloy_ms / peer_ms) if (alloy_ms and peer_ms) else None
    rows.append((what, alloy_ms, peer_name, peer_ms, ratio, note))
    r = f"{ratio:.2f}x" if ratio else "-"
    print(f"{what:44s} alloy {fmt(alloy_ms)}  {peer_name} {fmt(peer_ms)}  ratio {r} {note}", flush=True)


def fmt(v):
    return "n/a" if v is None else (f"{v:.3f} ms" if v >= 0.1 else f"{v * 1e3:.2f} us")


def alloy_ms(make, reps=9, batch=10, include_build=True):
    """Median over `reps` of (build `batch` outputs, one eval) per call, wall
    time. Without include_build only the eval is timed (the launches and the
    wait), as hand_ms times the hand-written kernels: the kernels' speed,
    apart from the host cost of building calls (timed on its own below)."""
    # Warm: compile, uploads, and the builds specialized to the inputs'
    # layouts, made after a few launches in the background (steady state).
    for _ in range(3):
        mx.eval(make())
    mx.fast._wait_for_specialized_kernels()
    mx.eval(make())
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        outs = [make() for _ in range(batch)]
        if not include_build:
            t0 = time.perf_counter()
        mx.eval(outs)
        times.append((time.perf_counter() - t0) * 1e3 / batch)
    return statistics.median(times)


def torch_ms(fn, reps=20):
    import torch
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        ts.append(s.elapsed_time(e))
    return statistics.median(ts)


def torch_wall_ms(fn, reps=9, batch=5):
    """alloy_ms's measure for PyTorch: a batch of calls and one synchronize."""
    import torch
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3 / batch)
    return statistics.median(times)


def grid_sample_ref_torch(x, grid):
    """The seed's grid_sample_ref, op for op in PyTorch (NHWC). One change:
    PyTorch's gather faults on out-of-range indices where MLX's reads
    anything, so each index is clamped before the gather (the masks zero those
    samples either way)."""
    import torch
    N, H_in, W_in, _ = x.shape
    ix = ((grid[..., 0] + 1) * W_in - 1) / 2
    iy = ((grid[..., 1] + 1) * H_in - 1) / 2
    ix_nw = torch.floor(ix).to(torch.int64)
    iy_nw = torch.floor(iy).to(torch.int64)
    ix_ne, iy_ne = ix_nw + 1, iy_nw
    ix_sw, iy_sw = ix_nw, iy_nw + 1
    ix_se, iy_se = ix_nw + 1, iy_nw + 1
    nw = (ix_se - ix) * (iy_se - iy)
    ne = (ix - ix_sw) * (iy_sw - iy)
    sw = (ix_ne - ix) * (iy - iy_ne)
    se = (ix - ix_nw) * (iy - iy_nw)
    n = torch.arange(N, device=x.device)[:, None, None]

    def corner(iy_, ix_):
        mask = (iy_ >= 0) & (iy_ <= H_in - 1) & (ix_ >= 0) & (ix_ <= W_in - 1)
        return x[n, iy_.clamp(0, H_in - 1), ix_.clamp(0, W_in - 1), :] * mask[..., None]

    return (corner(iy_nw, ix_nw) * nw[..., None] + corner(iy_ne, ix_ne) * ne[..., None] +
            corner(iy_sw, ix_sw) * sw[..., None] + corner(iy_se, ix_se) * se[..., None])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F
    import cupy as cp

    mx.set_default_device(mx.gpu)
    rng = np.random.default_rng(0)
    B, H, W, C = (2, 256, 256, 64) if args.quick else (8, 1024, 1024, 64)
    gN, gM = (64, 64) if args.quick else (256, 256)
    x_np = rng.standard_normal((B, H, W, C), dtype=np.float32)
    g_np = (rng.random((B, gN, gM, 2), dtype=np.float32) * 2.2 - 1.1).astype(np.float32)
    cot_np = rng.standard_normal((B, gN, gM, C), dtype=np.float32)

    # ---- peers: hand-written CUDA (CuPy) and PyTorch
    mod = cp.RawModule(code=(ROOT / "benchmarks" / "cuda" / "grid_sample.cu").read_text(),
                       options=("-arch=sm_90",))
    k_fwd, k_bwd = mod.get_function("grid_sample_fwd"), mod.get_function("grid_sample_bwd")
    xc, gc, cc = cp.asarray(x_np), cp.asarray(g_np), cp.asarray(cot_np)
    out_c = cp.empty((B, gN, gM, C), cp.float32)
    total = B * gN * gM * C

    def cuda_fwd():
        k_fwd(((total + 255) // 256,), (256,), (xc, gc, out_c, np.int32(H), np.int32(W), np.int32(C),
                                               np.int32(gN), np.int32(gM), np.uint32(total)))

    xg_c = cp.empty_like(xc)
    gg_c = cp.empty_like(gc)
    Cp = (C + 31) // 32 * 32
    total_b = B * gN * gM * Cp

    def cuda_bwd():
        xg_c.fill(0)
        gg_c.fill(0)
        k_bwd(((total_b + 255) // 256,), (256,), (xc, gc, cc, xg_c, gg_c, np.int32(H), np.int32(W), np.int32(C),
                                                 np.int32(gN), np.int32(gM), np.uint32(total_b)))

    def hand_ms(fn, reps=9, batch=10):
        """Median over `reps` of (`batch` launches, one synchronize) per call,
        wall time: the same measure alloy_ms takes of ours."""
        fn()
        cp.cuda.runtime.deviceSynchronize()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            for _ in range(batch):
                fn()
            cp.cuda.runtime.deviceSynchronize()
            times.append((time.perf_counter() - t0) * 1e3 / batch)
        return statistics.median(times)

    hand_fwd = hand_ms(cuda_fwd)
    hand_bwd = hand_ms(cuda_bwd, batch=5)
    xt_nhwc = torch.from_dlpack(xc)
    xt = xt_nhwc.permute(0, 3, 1, 2).contiguous()
    gt = torch.from_dlpack(gc)
    torch_fwd = torch_ms(lambda: F.grid_sample(xt, gt, mode="bilinear", padding_mode="zeros", align_corners=False))
    xt_r = xt.clone().requires_grad_(True)
    gt_r = gt.clone().requires_grad_(True)
    o = F.grid_sample(xt_r, gt_r, mode="bilinear", padding_mode="zeros", align_corners=False)
    cot_t = torch.from_dlpack(cc).permute(0, 3, 1, 2).contiguous()
    torch_bwd = torch_ms(lambda: torch.autograd.grad(o, (xt_r, gt_r), cot_t, retain_graph=True), reps=10)

    # ---- alloy: the seed's kernels, verbatim
    import grid_sample as seed

    x, grid, cot = mx.array(x_np), mx.array(g_np), mx.array(cot_np)
    fwd = alloy_ms(lambda: seed.grid_sample(x, grid), include_build=False)
    got = np.array(seed.grid_sample(x, grid))
    err = float(np.abs(got - cp.asnumpy(out_c)).max())
    row("grid_sample fwd (seed metal_kernel)", fwd, "hand CUDA", hand_fwd, f"max|diff|={err:.1e}")
    row("grid_sample fwd vs torch.grid_sample", fwd, "torch", torch_fwd)

    # As in MLX, `@grid_sample.vjp` re-binds the name to the custom function,
    # so the seed's VJP kernel runs through mx.vjp (the forward is not needed
    # by the rule and is never evaluated).
    def seed_vjp():
        return mx.vjp(seed.grid_sample, [x, grid], [cot])[1]

    bwd = alloy_ms(lambda: seed_vjp()[0], batch=5, include_build=False)
    xg, gg = seed_vjp()
    cuda_bwd()
    err_b = max(float(np.abs(np.array(xg) - cp.asnumpy(xg_c)).max()),
                float(np.abs(np.array(gg) - cp.asnumpy(gg_c)).max() / max(1.0, np.abs(cp.asnumpy(gg_c)).max())))
    row("grid_sample bwd (seed vjp kernel, zero-fill)", bwd, "hand CUDA", hand_bwd, f"max err={err_b:.1e}")
    row("grid_sample bwd vs torch backward", bwd, "torch", torch_bwd)

    # ---- the seed's grid_sample_ref (our ops) vs the same function written
    # with PyTorch ops, both wall clock of a batch and one wait (building our
    # graph included: that is what a user of either pays)
    t_ref = alloy_ms(lambda: seed.grid_sample_ref(x, grid), reps=9, batch=5)
    t_ref_torch = torch_wall_ms(lambda: grid_sample_ref_torch(xt_nhwc, gt), batch=5)
    err_r = float(np.abs(np.array(seed.grid_sample_ref(x, grid)) -
                         grid_sample_ref_torch(xt_nhwc, gt).cpu().numpy()).max())
    row("grid_sample_ref, our ops", t_ref, "same fn, torch ops", t_ref_torch, f"max|diff|={err_r:.1e}")

    # ---- the seeds' VJP comparison: mx.grad through the custom VJP kernel vs
    # autodiff through grid_sample_ref (our ops), vs PyTorch's backward
    loss_k = lambda a, b: mx.sum(seed.grid_sample(a, b) * cot)
    loss_r = lambda a, b: mx.sum(seed.grid_sample_ref(a, b) * cot)
    # (d/dx: autodiff through the reference refuses d/dgrid, as MLX does,
    # since it gathers at indices computed from the grid.)
    g_kernel = alloy_ms(lambda: mx.grad(loss_k)(x, grid), reps=3, batch=2)
    g_ref = alloy_ms(lambda: mx.grad(loss_r)(x, grid), reps=3, batch=1)
    gk = mx.grad(loss_k)(x, grid)
    gr = mx.grad(loss_r)(x, grid)
    rel = float(mx.max(mx.abs(gk - gr)).item()) / max(float(mx.max(mx.abs(gr)).item()), 1e-30)
    row("mx.grad via custom VJP kernel", g_kernel, "autodiff of ref", g_ref, f"rel diff={rel:.1e}")
    row("mx.grad via custom VJP kernel vs torch", g_kernel, "torch bwd", torch_bwd)

    # ---- exp on 1 GiB: the seed's exp kernel vs torch.exp vs a copy
    mx.set_default_device(mx.cpu)  # the seed module checks itself with ops at import
    import exp_elementwise as seed_exp
    mx.set_default_device(mx.gpu)
    n = (1 << 24) if args.quick else (1 << 28)
    a_np = rng.standard_normal(n, dtype=np.float32)
    a = mx.array(a_np)
    t_exp = alloy_ms(lambda: seed_exp.exp_elementwise(a), batch=5, include_build=False)
    at = torch.from_numpy(a_np).cuda()
    bt = torch.empty_like(at)
    t_texp = torch_ms(lambda: torch.exp(at, out=bt))
    t_copy = torch_ms(lambda: bt.copy_(at))
    gbps = 2 * n * 4 / (t_exp * 1e-3) / 1e9
    row("exp 1 GiB (seed kernel)", t_exp, "torch.exp", t_texp, f"{gbps:.0f} GB/s")
    row("exp 1 GiB vs d2d copy", t_exp, "copy", t_copy, f"{100 * t_copy / t_exp:.0f}% of copy bandwidth")

    # ---- the same exp as a CUDA body through mx.fast.cuda_kernel, against
    # the identical kernel launched by CuPy (RawKernel)
    cuda_exp_body = """
        const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
        if (i < size_t(inp_shape[0])) out[i] = expf(inp[i]);
    """
    ck = mx.fast.cuda_kernel(name="exp_cuda", input_names=["inp"], output_names=["out"], source=cuda_exp_body)
    t_cexp = alloy_ms(lambda: ck(inputs=[a], grid=(n, 1, 1), threadgroup=(256, 1, 1), output_shapes=[(n,)],
                                 output_dtypes=[mx.float32])[0], batch=5, include_build=False)
    raw_exp = cp.RawKernel(r'''extern "C" __global__ void exp_raw(const float* __restrict__ inp, int n,
                                                                float* __restrict__ out) {
        const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
        if (i < size_t(n)) out[i] = expf(inp[i]);
    }''', "exp_raw")
    ac = cp.asarray(a_np)
    oc = cp.empty_like(ac)
    t_rexp = hand_ms(lambda: raw_exp(((n + 255) // 256,), (256,), (ac, np.int32(n), oc)), batch=5)
    err = float(np.abs(np.array(ck(inputs=[a], grid=(n, 1, 1), threadgroup=(256, 1, 1), output_shapes=[(n,)],
                                   output_dtypes=[mx.float32])[0]) - cp.asnumpy(oc)).max())
    row("exp 1 GiB (cuda_kernel body)", t_cexp, "same body, CuPy", t_rexp, f"max|diff|={err:.1e}")

    # ---- host cost of a tiny metal_kernel call
    tiny = mx.array(np.ones(16, np.float32))
    src = "uint i = thread_position_in_grid.x; out[i] = inp[i] + 1.0f;"
    k = mx.fast.metal_kernel(name="tiny", input_names=["inp"], output_names=["out"], source=src)
    call = lambda: k(inputs=[tiny], grid=(16, 1, 1), threadgroup=(16, 1, 1), output_shapes=[(16,)],
                     output_dtypes=[mx.float32])[0]
    # Warm the whole path first (allocator buckets, caches, the CPU's clock
    # after the bandwidth runs), as host_cost_gpu.py does: the steady state
    # is what a loop of calls pays.
    for _ in range(2000):
        mx.eval(call())
    N = 2000
    per_call = per_eval = float("inf")
    for _ in range(5):  # best of five: the host is shared and noisy
        t0 = time.perf_counter()
        outs = [call() for _ in range(N)]
        mx.eval(outs)
        per_call = min(per_call, (time.perf_counter() - t0) / N * 1e3)
        del outs
        t0 = time.perf_counter()
        for _ in range(N):
            mx.eval(call())
        per_eval = min(per_eval, (time.perf_counter() - t0) / N * 1e3)
    # The peer: the same tiny kernel through CuPy (output allocated per call,
    # as ours is), best of five in the same process.
    raw = cp.RawKernel(r'extern "C" __global__ void k(const float* a, float* b) '
                       r'{ int i = threadIdx.x; b[i] = a[i] + 1.0f; }', "k")
    ca = cp.ones(16, cp.float32)
    for _ in range(2000):
        raw((1,), (16,), (ca, cp.empty_like(ca)))
        cp.cuda.Stream.null.synchronize()
    cp_call = cp_sync = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        keep = [raw((1,), (16,), (ca, cp.empty_like(ca))) for _ in range(N)]
        cp.cuda.Device().synchronize()
        cp_call = min(cp_call, (time.perf_counter() - t0) / N * 1e3)
        del keep
        t0 = time.perf_counter()
        for _ in range(N):
            raw((1,), (16,), (ca, cp.empty_like(ca)))
            cp.cuda.Stream.null.synchronize()
        cp_sync = min(cp_sync, (time.perf_counter() - t0) / N * 1e3)
    # The floor under any framework: the driver's launch and wait for the
    # same kernel, called from Python with ready-made arguments.
    import ctypes
    from cupy.cuda import driver
    cb = cp.empty_like(ca)
    ptrs = (ctypes.c_uint64 * 2)(ca.data.ptr, cb.data.ptr)
    params = (ctypes.c_void_p * 2)(ctypes.addressof(ptrs), ctypes.addressof(ptrs) + 8)
    fptr, pptr = raw.kernel.ptr, ctypes.addressof(params)
    stream_sync = cp.cuda.Stream.null.synchronize
    bare = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(N):
            driver.launchKernel(fptr, 1, 1, 1, 16, 1, 1, 0, 0, pptr, 0)
            stream_sync()
        bare = min(bare, (time.perf_counter() - t0) / N * 1e3)
    row("metal_kernel call, one eval at end (host)", per_call, "target", 0.005)
    row("metal_kernel call, one eval at end (host)", per_call, "cupy RawKernel+empty_like", cp_call)
    row("metal_kernel call + its own eval", per_eval, "target", 0.010)
    row("metal_kernel call + its own eval", per_eval, "cupy launch+synchronize", cp_sync)
    row("metal_kernel call + its own eval", per_eval, "bare cuLaunchKernel+sync", bare)

    # ---- compile: first compile in a fresh cache, then disk-cache load in a fresh process
    probe = ROOT / "benchmarks" / "compile_probe.py"

    def run_probe(cache):
        env = dict(os.environ, ALLOY_CACHE_DIR=cache)
        return float(subprocess.check_output([sys.executable, str(probe)], env=env, text=True).strip())

    # Fresh processes vary (page cache, clocks): medians. Each compile gets an
    # empty cache of its own; the loads reuse the last one.
    caches = [f"/tmp/alloy-bench-cache-{os.getpid()}-{i}" for i in range(3)]
    firsts = [run_probe(c) for c in caches]
    loads = [run_probe(caches[-1]) for _ in range(5)]
    row("first compile of grid_sample (NVRTC)", statistics.median(firsts), "target", 100.0,
        f"median of 3; {min(firsts):.0f}-{max(firsts):.0f} ms")
    row("load from disk cache, fresh process", statistics.median(loads), "target", 2.0,
        f"median of 5; {min(loads):.2f}-{max(loads):.2f} ms")

    if args.out:
        with open(args.out, "w") as f:
            f.write("| benchmark | alloy | peer | peer time | alloy/peer | note |\n|---|---|---|---|---|---|\n")
            for what, a_, pn, p_, r_, note in rows:
                f.write(f"| {what} | {fmt(a_)} | {pn} | {fmt(p_)} | {'-' if r_ is None else f'{r_:.2f}'} | {note} |\n")


if __name__ == "__main__":
    main()
