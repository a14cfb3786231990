"""Host cost of deep lazy graphs: a chain of many tiny ops evaluated once.

Builds chains of N dependent ops on a 16-element float32 array (the device
work is negligible, so the time is the framework's own), evaluates the last
one, and reports microseconds per op for building the graph (Python + op
construction) and for evaluating it (ordering, launches, the final wait).
Alloy and real MLX run in the same process on the same data when MLX is
importable (mlx-cuda on the GPU machine, mlx-cpu here).

Usage: python benchmarks/bench_lazy_chain.py [--device gpu|cpu] [--ops 2000] [--reps 7]
"""
import argparse
import time

import numpy as np

CHAINS = {
    # name: (step, ops per step)
    "x*c+c": (lambda mx, x, y: x * 1.0001 + 0.5, 2),
    "x+y": (lambda mx, x, y: x + y, 1),
    "sin/abs": (lambda mx, x, y: mx.abs(mx.sin(x)), 2),
    "mixed": (lambda mx, x, y: mx.maximum(x * y, 0.25) - mx.sin(x), 4),
}


def chain_cost(mx, dev, step, ops_per_step, n_ops, reps):
    mx.set_default_device(dev)
    rng = np.random.default_rng(0)
    x0 = mx.array(rng.random(16, dtype=np.float32))
    y = mx.array(rng.random(16, dtype=np.float32) * 1e-3)
    mx.eval(x0, y)
    steps = max(1, n_ops // ops_per_step)
    best_build = best_eval = float("inf")
    for _ in range(reps + 1):  # the first round warms caches and the allocator
        t0 = time.perf_counter()
        x = x0
        for _ in range(steps):
            x = step(mx, x, y)
        t1 = time.perf_counter()
        mx.eval(x)
        np.asarray(x)  # the value reached the host
        t2 = time.perf_counter()
        best_build = min(best_build, (t1 - t0) / (steps * ops_per_step) * 1e6)
        best_eval = min(best_eval, (t2 - t1) / (steps * ops_per_step) * 1e6)
    return best_build, best_eval, np.asarray(x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="gpu", choices=["gpu", "cpu"])
    ap.add_argument("--ops", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()

    import alloy.core as amx
    frameworks = [("alloy", amx)]
    try:
        import mlx.core as mmx
        if args.device == "gpu" and not mmx.is_available(mmx.gpu):
            raise ImportError("mlx has no GPU here")
        frameworks.append(("mlx", mmx))
    except Exception as e:  # noqa: BLE001 - the peer is optional
        print(f"(real MLX not measured: {e})")

    print(f"chains of {args.ops} ops on 16 float32 elements, device {args.device}, best of {args.reps}")
    print("| chain | alloy build us/op | alloy eval us/op | alloy total | mlx build | mlx eval | mlx total "
          "| alloy/mlx total | same values |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, (step, k) in CHAINS.items():
        row = {}
        for label, mx in frameworks:
            dev = mx.gpu if args.device == "gpu" else mx.cpu
            row[label] = chain_cost(mx, dev, step, k, args.ops, args.reps)
        ab, ae, av = row["alloy"]
        if "mlx" in row:
            mb, me, mv = row["mlx"]
            same = f"max|diff| {np.max(np.abs(av.astype(np.float64) - mv)):.1e}" if np.isfinite(av).all() else "(not finite)"
            print(f"| {name} | {ab:.2f} | {ae:.2f} | {ab + ae:.2f} | {mb:.2f} | {me:.2f} | {mb + me:.2f} "
                  f"| {(ab + ae) / (mb + me):.2f} | {same} |")
        else:
            print(f"| {name} | {ab:.2f} | {ae:.2f} | {ab + ae:.2f} | | | | | |")


if __name__ == "__main__":
    main()
