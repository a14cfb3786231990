"""Reductions and softmax on the GPU (issue 16, item 1): Alloy against a
device-to-device copy of the same bytes (the memory's speed) and, in the same
process on the same data, real MLX's CUDA backend (when `mlx.core` imports
with a GPU) and PyTorch. float32, sizes from 4 K to 256 M elements (1 GiB),
over all axes, the last axis and the first axis of a square matrix, and
softmax / logsumexp over the last axis (plus the issue's 8192 x 32768).

"% copy" = (bytes read + bytes written) / time, as a share of the copy's
bandwidth (2 x bytes / copy time). Ratios are Alloy's time over the peer's.

Usage: python3 benchmarks/bench_reduce_gpu.py [--max-log2 28] [--reps 10]
"""
import argparse
import math

import numpy as np

import alloy.core as mx
from timing import best_ms

OPS = ["sum", "mean", "max", "min", "prod", "argmax", "argmin", "all", "any", "logsumexp", "var", "softmax"]


def peers():
    """{name: (module, sync)} for the peers that import here with a GPU."""
    out = {}
    try:
        import mlx.core as mlx_core
        if mlx_core.default_device() == mlx_core.gpu:
            out["mlx"] = mlx_core
    except Exception:
        pass
    try:
        import torch
        if torch.cuda.is_available():
            out["torch"] = torch
    except Exception:
        pass
    return out


def call(m, op, a, axis):
    """The op through module m (alloy.core or mlx.core: the same names)."""
    fn = getattr(m, op)
    if op in ("argmax", "argmin"):
        return (lambda: fn(a, axis=axis)) if axis is not None else (lambda: fn(m.reshape(a, (-1,))))
    if op == "softmax":
        return lambda: fn(a, axis=-1 if axis is None else axis)
    return lambda: fn(a, axis=axis)


def torch_call(torch, op, a, axis):
    dims = tuple(range(a.ndim)) if axis is None else axis
    if op in ("sum", "mean", "prod", "logsumexp", "var"):
        if op == "prod" and isinstance(dims, tuple):
            return lambda: torch.prod(a.reshape(-1))
        if op == "var":
            return lambda: torch.var(a, dim=dims, correction=0)
        return lambda: getattr(torch, op)(a, dim=dims)
    if op in ("max", "min"):
        return lambda: torch.amax(a, dim=dims) if op == "max" else torch.amin(a, dim=dims)
    if op in ("argmax", "argmin"):
        return lambda: getattr(torch, op)(a, dim=None if axis is None else axis)
    if op in ("all", "any"):
        return lambda: getattr(torch, op)(a, dim=dims) if isinstance(dims, int) else getattr(torch, op)(a)
    if op == "softmax":
        return lambda: torch.softmax(a, dim=-1 if axis is None else axis)
    raise ValueError(op)


def moved_bytes(op, n, n_out):
    out_elems = n if op == "softmax" else n_out
    out_size = 4 if op not in ("argmax", "argmin", "all", "any") else (4 if op.startswith("arg") else 1)
    return 4 * n + out_size * out_elems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-log2", type=int, default=28)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--ops", default=",".join(OPS))
    args = ap.parse_args()
    ops = args.ops.split(",")
    mx.set_default_device(mx.gpu)
    others = peers()
    rng = np.random.default_rng(0)
    print("peers:", ", ".join(others) or "none")
    cols = ["op", "axis", "elements", "alloy ms", "% copy"]
    for name in others:
        cols += [f"{name} ms", f"alloy/{name}"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    sizes = [2 ** k for k in range(12, args.max_log2 + 1, 4)]
    cases = []
    for n in sizes:
        side = 2 ** (int(math.log2(n)) // 2)
        cases.append((n, (n // side, side)))
    if args.max_log2 >= 28:
        cases.append((8192 * 32768, (8192, 32768)))
    for n, shape in cases:
        x_np = rng.standard_normal(shape, dtype=np.float32)
        if "prod" in ops:
            x_np_prod = (1 + 1e-4 * x_np).astype(np.float32)
        a = mx.array(x_np)
        mx.eval(a)
        # The memory's speed: a device-to-device copy of the same bytes
        # (torch's copy_, else Alloy's own a + 0, one read and one write).
        if "torch" in others:
            torch = others["torch"]
            ta = torch.from_numpy(x_np).cuda()
            tb = torch.empty_like(ta)

            def copy():
                tb.copy_(ta)
                torch.cuda.synchronize()
            copy_ms, copy_name = best_ms(copy, args.reps), "d2d copy (torch copy_)"
            del ta, tb
        else:
            copy_ms, copy_name = best_ms(lambda: mx.eval(a + 0), args.reps), "copy (alloy a + 0)"
        copy_bw = 2 * 4 * n / copy_ms
        handles = {}
        for name, m in others.items():
            if name == "mlx":
                handles[name] = m.array(x_np)
                m.eval(handles[name])
            else:
                handles[name] = m.from_numpy(x_np).cuda()
        for op in ops:
            for axis in (None, -1, 0):
                if op in ("softmax", "logsumexp") and axis == 0:
                    continue
                if op == "softmax" and axis is None:
                    continue
                if shape == (8192, 32768) and op not in ("softmax", "logsumexp", "sum"):
                    continue
                src = a if op != "prod" else mx.array(x_np_prod)
                if op in ("all", "any"):
                    src = a > 0
                mx.eval(src)
                f = call(mx, op, src, axis)
                t = best_ms(lambda: mx.eval(f()), args.reps)
                n_out = 1 if axis is None else (shape[0] if axis == -1 else shape[1])
                pct = 100 * moved_bytes(op, n, n_out) / t / copy_bw
                row = [op, "all" if axis is None else str(axis), f"{shape[0]}x{shape[1]}", f"{t:.4f}", f"{pct:.0f}%"]
                for name, m in others.items():
                    h = handles[name] if op != "prod" else None
                    if name == "mlx":
                        h = m.array(x_np_prod) if op == "prod" else h
                        if op in ("all", "any"):
                            h = h > 0
                        m.eval(h)
                        g = call(m, op, h, axis)
                        tp = best_ms(lambda: m.eval(g()), args.reps)
                    else:
                        h = m.from_numpy(x_np_prod).cuda() if op == "prod" else h
                        if op in ("all", "any"):
                            h = h > 0
                        g = torch_call(m, op, h, axis)

                        def run():
                            g()
                            m.cuda.synchronize()
                        tp = best_ms(run, args.reps)
                    row += [f"{tp:.4f}", f"{t / tp:.2f}"]
                print("| " + " | ".join(row) + " |", flush=True)
        print(f"| {copy_name} | | {shape[0]}x{shape[1]} | {copy_ms:.4f} | 100% |" + " |" * (2 * len(others)))


if __name__ == "__main__":
    main()
