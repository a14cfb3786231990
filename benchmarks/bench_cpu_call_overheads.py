"""Host cost of a custom_function call and the CPU fill of mx.zeros/mx.full,
Alloy against real MLX (mlx[cpu]), each framework in its own process (one
framework's thread pool would disturb the other's timings).

Rows, median of 9 rounds:
  custom_function, 2 array args, outside any transformation (us per call)
  custom_function with a two-op body, built, not evaluated (us per call)
  mx.zeros((2, 256, 256, 64)) evaluated (ms)
  mx.full((2, 256, 256, 64), 1.5) evaluated (ms)

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
    else:
        import alloy.core as mx
    mx.set_default_device(mx.cpu)
    rng = np.random.default_rng(0)
    x = mx.array(rng.standard_normal((2, 16, 16, 32)).astype(np.float32))
    g = mx.array(rng.uniform(-1, 1, (2, 8, 8, 2)).astype(np.float32))
    identity = mx.custom_function(lambda a, b: a)
    two_ops = mx.custom_function(lambda a, b: a * 2 + mx.sum(b))
    mx.eval(identity(x, g), two_ops(x, g))

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
