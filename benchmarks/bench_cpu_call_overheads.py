"""Host cost of a custom_function call and the CPU fill of mx.zeros/mx.full,
Alloy against real MLX (mlx[cpu]), each framework in its own process (one
framework's thread pool would disturb the other's timings).

Rows, median of 9 rounds:
  custom_function, 2 array args, outside any transformation (us per call)
  custom_function with a two-op body, built, not evaluated (us per call)
  mx.zeros((2, 256, 256, 64)) evaluated (ms)
  mx.full((2, 256, 256, 64), 1.5) evaluated (ms)
  a tiny metal_kernel call, built, not evaluated (us per call): in MLX's
    process through alloy.mlx (MLX has no Metal kernels off macOS), so the
    row compares alloy.mlx's call with Alloy's own

  python benchmarks/bench_cpu_call_overheads.py
"""
import json
import statistics
import subprocess
import sys
import time


def measure(framework):
    import numpy as np

    if framework == "mlx":
        import mlx.core as mx
        import alloy.mlx  # noqa: F401  (mx.fast.metal_kernel runs through Alloy)
    else:
        import alloy.core as mx
    mx.set_default_device(mx.cpu)
    rng = np.random.default_rng(0)
    x = mx.array(rng.standard_normal((2, 16, 16, 32)).astype(np.float32))
    g = mx.array(rng.uniform(-1, 1, (2, 8, 8, 2)).astype(np.float32))
    identity = mx.custom_function(lambda a, b: a)
    two_ops = mx.custom_function(lambda a, b: a * 2 + mx.sum(b))
    mx.eval(identity(x, g), two_ops(x, g))
    kernel = mx.fast.metal_kernel(name="twice", input_names=["inp"], output_names=["out"],
                                  source="uint i = thread_position_in_grid.x; out[i] = inp[i] * 2.0f;")
    small = mx.ones((1024,))
    mx.eval(small)

    def kernel_call():
        return kernel(inputs=[small], output_shapes=[(1024,)], output_dtypes=[mx.float32], grid=(1024, 1, 1),
                      threadgroup=(256, 1, 1))

    def per_call_us(fn, n=2000):
        rounds = []
        for _ in range(9):
            t = time.perf_counter()
            kept = [fn() for _ in range(n)]
            rounds.append((time.perf_counter() - t) / n * 1e6)
            del kept
        return statistics.median(rounds)

    def eval_ms(fn):
        mx.eval(fn())
        rounds = []
        for _ in range(9):
            t = time.perf_counter()
            mx.eval(fn())
            rounds.append((time.perf_counter() - t) * 1e3)
        return statistics.median(rounds)

    return {
        "custom_function call (us)": per_call_us(lambda: identity(x, g)),
        "custom_function, two-op body, built (us)": per_call_us(lambda: two_ops(x, g)),
        "metal_kernel call, built (us)": per_call_us(kernel_call),
        "zeros 8M float32 (ms)": eval_ms(lambda: mx.zeros((2, 256, 256, 64))),
        "full 8M float32 (ms)": eval_ms(lambda: mx.full((2, 256, 256, 64), 1.5)),
    }


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        print(json.dumps(measure(sys.argv[2])))
        return
    results = {}
    for fw in ("alloy", "mlx"):
        out = subprocess.run([sys.executable, __file__, "--child", fw], capture_output=True, text=True, check=True)
        results[fw] = json.loads(out.stdout.strip().splitlines()[-1])
    print("| what | alloy | mlx-cpu | ratio |")
    print("|---|---|---|---|")
    for k in results["alloy"]:
        a, m = results["alloy"][k], results["mlx"][k]
        print(f"| {k} | {a:.2f} | {m:.2f} | {a / m:.2f}x |")


if __name__ == "__main__":
    main()
