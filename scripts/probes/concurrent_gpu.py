"""Wrong GPU results when kernels queued earlier run late (issue found
2026-12-03 with the suite in several processes on one GPU).

    python concurrent_gpu.py WHICH ITERS

WHICH: alloy_gpu | alloy_cpu | mlx (each process checks ifft and a reduction
against numpy; run two at once to make each one's kernels wait), or
queued (one process: a large matmul keeps the GPU busy while small ops are
queued behind it and a new scalar is used next). Prints how many results
were wrong."""
import sys

import numpy as np

which, iters = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng()
bad = 0
if which.startswith("alloy") or which == "queued":
    import alloy.core as mx
    mx.set_default_device(mx.cpu if which == "alloy_cpu" else mx.gpu)
else:
    import mlx.core as mx
if which == "queued":
    big = mx.random.normal((4096, 4096))
    mx.eval(big)
for it in range(iters):
    if which == "queued":
        x = rng.standard_normal(64).astype(np.float32)
        slow = big @ big
        y = mx.exp(mx.array(x)) * 1.5 - 0.25
        mx.async_eval(slow, y)
        s = float(rng.standard_normal())
        got = np.array(y * s)
        wrong = not np.allclose(got, (np.exp(x.astype(np.float64)) * 1.5 - 0.25) * s, rtol=1e-5, atol=1e-5)
        bad += wrong
        if wrong and bad <= 3:
            print(f"queued it {it}: scale {s:.4f}, got/want {got[0] / ((np.exp(x[0]) * 1.5 - 0.25) * s):.4f}")
        continue
    n = int(rng.integers(5, 40))
    x = (rng.standard_normal((3, n)) + 1j * rng.standard_normal((3, n))).astype(np.complex64)
    got = np.array(mx.fft.ifft(mx.array(x), norm="ortho"))
    want = np.fft.ifft(x.astype(np.complex128), norm="ortho")
    e1 = not np.allclose(got, want, rtol=1e-4, atol=1e-4)
    a = rng.standard_normal((64, n)).astype(np.float32)
    got2 = np.array(mx.sum(mx.exp(mx.array(a)) * 2 + 1, axis=1))
    want2 = (np.exp(a.astype(np.float64)) * 2 + 1).sum(1)
    e2 = not np.allclose(got2, want2, rtol=1e-4, atol=1e-3)
    if e1 or e2:
        bad += 1
        if bad <= 3:
            print(f"{which} it {it} n {n}: fft {'bad' if e1 else 'ok'} sum {'bad' if e2 else 'ok'}", flush=True)
print(f"{which}: {bad} of {iters} wrong", flush=True)
