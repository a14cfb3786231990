"""alloy.mlx on real MLX's CUDA backend (mlx-cuda-13), one process, one GPU:

- the seed's grid_sample forward and VJP through `import mlx.core as mx` +
  `import alloy.mlx`, against the same seed through Alloy's own metal_kernel
  (`import alloy.core`) on the same data;
- the host cost of a tiny kernel call through the plugin, against MLX's own
  `mx.fast.cuda_kernel` doing the same work: amortised (many calls, one eval)
  and with an eval per call.

Each pair is timed in alternating rounds (alloy.mlx first in odd rounds,
its peer first in even ones), a median of repeats per round; a row gives
each side's median over the rounds and the median, lowest and highest of
the rounds' ratios, so a clock or load change during the run moves both
sides of a ratio rather than one (earlier runs timed one side, then the
other, and their forward ratio moved 1.12-1.46x between runs).

Usage: python3 benchmarks/bench_mlx_plugin.py [--out table.md] [--rounds N] [--only-fresh]
(run by scripts/gpu_check.sh; needs MLX with CUDA). Also runs on MLX's CPU
backend (mlx[cpu]) for the grid_sample rows, with --cpu.
"""
import argparse
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
from seeds import load  # noqa: E402  (the seed files with MLX's import line)

rows = []
ROUNDS = 7


def fmt(v):
    return f"{v * 1e3:.3f} ms" if v >= 1e-4 else f"{v * 1e6:.2f} us"


def row(what, plugin_s, peer, peer_s, ratios=None):
    ratio = statistics.median(ratios) if ratios else plugin_s / peer_s
    spread = f"{min(ratios):.2f}-{max(ratios):.2f}x" if ratios else ""
    rows.append((what, plugin_s, peer, peer_s, ratio, spread))
    print(f"{what:48s} plugin {fmt(plugin_s)}  {peer} {fmt(peer_s)}  ratio {ratio:.2f}x {spread}", flush=True)


def best(fn, repeat=20, inner=1):
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        times.append((time.perf_counter() - t0) / inner)
    return statistics.median(times)


def paired(what, plugin_fn, peer, peer_fn, repeat=20, per=1):
    """Times plugin_fn and peer_fn (each doing `per` units of work) in
    ROUNDS alternating rounds and adds the row."""
    plugin_t, peer_t, ratios = [], [], []
    # Warm both, until the GPU builds specialized to the inputs' layouts
    # (made after a few launches, in the background) are in place.
    for _ in range(3):
        plugin_fn()
        peer_fn()
    ax.fast._wait_for_specialized_kernels()
    for r in range(ROUNDS):
        if r % 2 == 0:
            p = best(plugin_fn, repeat) / per
            q = best(peer_fn, repeat) / per
        else:
            q = best(peer_fn, repeat) / per
            p = best(plugin_fn, repeat) / per
        plugin_t.append(p)
        peer_t.append(q)
        ratios.append(p / q)
    row(what, statistics.median(plugin_t), peer, statistics.median(peer_t), ratios)
    return statistics.median(plugin_t), statistics.median(peer_t)


# benchmarks/cuda/grid_sample.cu's forward as an MLX cuda_kernel body.
HAND_FORWARD_BODY = """
    const unsigned elem = blockIdx.x * blockDim.x + threadIdx.x;
    if (elem >= unsigned(B * GH * GW * C)) return;
    const int h_stride = W * C, b_stride = H * h_stride;
    const unsigned g = elem / C * 2;
    const float ix = ((grid[g] + 1) * W - 1) / 2, iy = ((grid[g + 1] + 1) * H - 1) / 2;
    const int x0 = floorf(ix), y0 = floorf(iy), x1 = x0 + 1, y1 = y0 + 1;
    const int base = elem / C / GH / GW * b_stride + elem % C;
    auto inside = [](int yy, int xx) { return yy >= 0 && yy <= H - 1 && xx >= 0 && xx <= W - 1; };
    const float v00 = inside(y0, x0) ? x[base + y0 * h_stride + x0 * C] : 0.f;
    const float v01 = inside(y0, x1) ? x[base + y0 * h_stride + x1 * C] : 0.f;
    const float v10 = inside(y1, x0) ? x[base + y1 * h_stride + x0 * C] : 0.f;
    const float v11 = inside(y1, x1) ? x[base + y1 * h_stride + x1 * C] : 0.f;
    out[elem] = (x1 - ix) * (y1 - iy) * v00 + (ix - x0) * (y1 - iy) * v01 + (x1 - ix) * (iy - y0) * v10 +
                (ix - x0) * (iy - y0) * v11;
"""


def hand_forward(xm, gm):
    """MLX's own cuda_kernel around HAND_FORWARD_BODY, for the input xm
    (B, H, W, C) and the grid gm (B, GH, GW, 2): a function that returns the
    forward's output (not evaluated)."""
    (B, H, W, C), (_, gh, gw, _) = xm.shape, gm.shape
    hand = mx.fast.cuda_kernel(name="grid_sample_hand", input_names=["x", "grid"], output_names=["out"],
                               source=HAND_FORWARD_BODY)

    def call():
        return hand(inputs=[xm, gm], template=[("B", B), ("H", H), ("W", W), ("C", C), ("GH", gh), ("GW", gw)],
                    grid=(B * gh * gw * C, 1, 1), threadgroup=(256, 1, 1), output_shapes=[(B, gh, gw, C)],
                    output_dtypes=[mx.float32])[0]
    return call


def bench_grid_sample(gpu):
    seed_mlx = load("grid_sample")
    import grid_sample as seed_alloy
    rng = np.random.default_rng(0)
    B, H, W, C, gh, gw = 8, 64, 64, 32, 256, 256
    x = rng.standard_normal((B, H, W, C)).astype(np.float32)
    g = rng.uniform(-1, 1, (B, gh, gw, 2)).astype(np.float32)
    cot = rng.standard_normal((B, gh, gw, C)).astype(np.float32)
    xm, gm, cm = mx.array(x), mx.array(g), mx.array(cot)
    xa, ga, ca = ax.array(x), ax.array(g), ax.array(cot)
    if gpu:
        ax.set_default_device(ax.gpu)
        xa, ga, ca = (ax.array(v) for v in (x, g, cot))
    mx.eval(xm, gm, cm)
    ax.eval(xa, ga, ca)
    fwd = lambda: mx.eval(seed_mlx.grid_sample(xm, gm))  # noqa: E731
    fwd_own = lambda: ax.eval(seed_alloy.grid_sample(xa, ga))  # noqa: E731
    _, fwd_a = paired("grid_sample forward (seed)", fwd, "alloy own", fwd_own)
    # Ten launches per eval: the kernels' cost, with MLX's per-eval work
    # (graph instantiation, synchronisation) spread over them.
    _, fwd10_a = paired("grid_sample forward, 10 per eval",
                        lambda: mx.eval([seed_mlx.grid_sample(xm, gm) for _ in range(10)]), "alloy own",
                        lambda: ax.eval([seed_alloy.grid_sample(xa, ga) for _ in range(10)]), repeat=10, per=10)
    # The seed's kernel call alone, without the seed's @custom_function: on
    # the development machine MLX's custom_function costs 3.4 us a call and
    # Alloy's under 0.1, most of the build-time difference between the paths.
    body = (ROOT / "examples" / "seeds" / "grid_sample.py").read_text().split('source = """')[1].split('"""')[0]

    def bare_call(m, xv, gv):
        kernel = m.fast.metal_kernel(name="grid_sample", input_names=["x", "grid"], output_names=["out"], source=body)
        return kernel(inputs=[xv, gv], template=[("T", xv.dtype)], output_shapes=[(B, gh, gw, C)],
                      output_dtypes=[xv.dtype], grid=(B * gh * gw * C, 1, 1), threadgroup=(256, 1, 1))[0]

    paired("info: forward kernel call without custom_function, 10 per eval",
           lambda: mx.eval([bare_call(mx, xm, gm) for _ in range(10)]), "alloy own",
           lambda: ax.eval([bare_call(ax, xa, ga) for _ in range(10)]), repeat=10, per=10)
    if gpu:
        # The same forward through MLX's own cuda_kernel, the algorithm as
        # hand-written CUDA (benchmarks/cuda/grid_sample.cu): what MLX's
        # graph costs around any custom kernel, with no Alloy in the path.
        mlx_hand = hand_forward(xm, gm)
        np.testing.assert_allclose(np.array(mlx_hand()), np.array(seed_mlx.grid_sample(xm, gm)), rtol=1e-5,
                                   atol=1e-5)
        hand10 = lambda: mx.eval([mlx_hand() for _ in range(10)])  # noqa: E731
        paired("info: grid_sample forward, 10 per eval: MLX cuda_kernel (hand CUDA)", hand10, "alloy own",
               lambda: ax.eval([seed_alloy.grid_sample(xa, ga) for _ in range(10)]), repeat=10, per=10)
        paired("info: grid_sample forward, 10 per eval: plugin",
               lambda: mx.eval([seed_mlx.grid_sample(xm, gm) for _ in range(10)]), "MLX cuda_kernel (hand CUDA)",
               hand10, repeat=10, per=10)
        paired("info: grid_sample forward: MLX cuda_kernel (hand CUDA)", lambda: mx.eval(mlx_hand()), "alloy own",
               fwd_own)
    if not gpu:
        # MLX's CPU allocator keeps at most 32 MB of freed buffers by default,
        # so each 64 MB output takes fresh pages (16384 page faults an eval),
        # as MLX's own ops' outputs of that size do; Alloy's keeps large blocks.
        limit = mx.set_cache_limit(1 << 30)
        paired("info: grid_sample forward, mx.set_cache_limit(1 GB)", fwd, "alloy own", fwd_own)
        mx.set_cache_limit(limit)
    paired("grid_sample VJP (seed)", lambda: mx.eval(mx.vjp(seed_mlx.grid_sample, [xm, gm], [cm])[1]), "alloy own",
           lambda: ax.eval(ax.vjp(seed_alloy.grid_sample, [xa, ga], [ca])[1]))
    paired("grid_sample VJP, 10 per eval",
           lambda: mx.eval([mx.vjp(seed_mlx.grid_sample, [xm, gm], [cm])[1] for _ in range(10)]), "alloy own",
           lambda: ax.eval([ax.vjp(seed_alloy.grid_sample, [xa, ga], [ca])[1] for _ in range(10)]), repeat=10, per=10)


def bench_tiny_call():
    x = mx.ones((256,))
    mx.eval(x)
    k_metal = mx.fast.metal_kernel(name="tiny_metal", input_names=["inp"], output_names=["out"],
                                   source="uint i = thread_position_in_grid.x; out[i] = inp[i] + 1.0f;")
    k_cuda = mx.fast.cuda_kernel(name="tiny_cuda", input_names=["inp"], output_names=["out"],
                                 source="auto i = blockIdx.x * blockDim.x + threadIdx.x; if (i < 256) out[i] = inp[i] + 1.0f;")
    kw = dict(inputs=[x], grid=(256, 1, 1), threadgroup=(256, 1, 1), output_shapes=[(256,)],
              output_dtypes=[mx.float32])
    assert np.array_equal(np.array(k_metal(**kw)[0]), np.array(k_cuda(**kw)[0]))
    n = 200

    def amortised(k):
        def run():
            outs = [k(**kw)[0] for _ in range(n)]
            mx.eval(outs)
        return run

    paired("tiny kernel call, one eval per 200 calls", amortised(k_metal), "mlx cuda_kernel", amortised(k_cuda),
           repeat=10, per=n)
    paired("tiny kernel call with its own eval", lambda: mx.eval(k_metal(**kw)[0]), "mlx cuda_kernel",
           lambda: mx.eval(k_cuda(**kw)[0]), repeat=200)


def elementwise_pair(name, expression, n):
    """A random input of n floats, `out[i] = expression` as a metal_kernel and
    as MLX's own cuda_kernel, and their launch keywords (without inputs)."""
    x = mx.random.normal((n,))
    mx.eval(x)
    k_metal = mx.fast.metal_kernel(name=f"{name}_metal", input_names=["inp"], output_names=["out"],
                                   source=f"uint i = thread_position_in_grid.x; out[i] = {expression};")
    k_cuda = mx.fast.cuda_kernel(name=f"{name}_cuda", input_names=["inp"], output_names=["out"],
                                 source=f"auto i = blockIdx.x * blockDim.x + threadIdx.x; out[i] = {expression};")
    kw = dict(grid=(n, 1, 1), threadgroup=(256, 1, 1), output_shapes=[(n,)], output_dtypes=[mx.float32])
    return x, k_metal, k_cuda, kw


def bench_between_mlx_ops():
    # A kernel whose output has the size of the MLX op's before it: the op's
    # device buffer, freed, waits in MLX's buffer cache for the next
    # allocation of its size, which is the kernel's output.
    n = 1 << 22
    x, k_metal, k_cuda, kw = elementwise_pair("after_exp", "inp[i] * 2.0f", n)

    def step(k):
        return k(inputs=[mx.exp(x)], **kw)[0]

    assert np.array_equal(np.array(step(k_metal)), np.array(step(k_cuda)))

    def loop(k):
        def run():
            for _ in range(20):
                mx.eval(step(k))
        return run

    paired("exp then a kernel of exp's size (16 MB), an eval each", loop(k_metal), "mlx cuda_kernel", loop(k_cuda),
           repeat=10, per=20)


def bench_fresh_output():
    # A kernel writing an output MLX's allocator has just made: mx.clear_cache()
    # before each call empties MLX's buffer cache. Both take device memory
    # from MLX's cu::malloc_async; with ALLOY_MLX_DEVICE_OUTPUTS=0 the
    # plugin's are managed memory (allocator::malloc), whose pages reach the
    # GPU by page faults.
    x, k_metal, k_cuda, kw = elementwise_pair("fresh", "inp[i] + 1.0f", 1 << 24)  # 64 MB of float32
    kw = dict(kw, inputs=[x])
    assert np.array_equal(np.array(k_metal(**kw)[0]), np.array(k_cuda(**kw)[0]))

    def fresh(k):
        def run():
            mx.clear_cache()
            mx.eval(k(**kw)[0])
        return run

    paired("a kernel into a fresh 64 MB output (clear_cache before each)", fresh(k_metal), "mlx cuda_kernel",
           fresh(k_cuda), repeat=5)


def main():
    global ROUNDS
    p = argparse.ArgumentParser()
    p.add_argument("--out")
    p.add_argument("--cpu", action="store_true", help="MLX's CPU backend (grid_sample rows only)")
    p.add_argument("--rounds", type=int, default=ROUNDS, help="alternating rounds per pair")
    p.add_argument("--only-fresh", action="store_true", help="only the fresh-output row")
    a = p.parse_args()
    ROUNDS = a.rounds
    gpu = not a.cpu
    if gpu:
        assert mx.cuda.is_available(), "needs MLX with its CUDA backend (mlx-cuda-13), or --cpu"
        mx.set_default_device(mx.gpu)
    print(f"mlx {mx.__version__} on {mx.default_device()}")
    if a.only_fresh:
        bench_fresh_output()
        return
    bench_grid_sample(gpu)
    if gpu:
        bench_tiny_call()
        bench_between_mlx_ops()
        bench_fresh_output()
    if a.out:
        with open(a.out, "w") as f:
            f.write(f"| what | alloy.mlx | peer | peer time | ratio (median of {ROUNDS} rounds) | rounds' range |\n"
                    "|---|---|---|---|---|---|\n")
            for what, t, peer, pt, r, spread in rows:
                f.write(f"| {what} | {fmt(t)} | {peer} | {fmt(pt)} | {r:.2f}x | {spread} |\n")


if __name__ == "__main__":
    main()
