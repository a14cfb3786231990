"""The seed's grid_sample forward kernel, mx.grad through its custom VJP
kernel and autodiff through grid_sample_ref on the CPU, one line per run.

The development machine's speed drifts by up to 2x within seconds, so two
builds are compared by running this in alternating processes, one with the
other build's package first on the path:

    for i in 1 2 3; do PYTHONPATH=/tmp/oldpkg python benchmarks/cpu_vjp_pairs.py
                       python benchmarks/cpu_vjp_pairs.py; done

Shapes: the benchmark's (x 2x256x256x64, grid 2x128x128x2); median of 7
calls after one warm-up.
"""
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples" / "seeds"))
import alloy.core as mx  # noqa: E402
from timing import median_ms  # noqa: E402


def main():
    import grid_sample as seed
    mx.set_default_device(mx.cpu)
    rng = np.random.default_rng(0)
    x = mx.array(rng.standard_normal((2, 256, 256, 64), dtype=np.float32))
    g = mx.array((rng.random((2, 128, 128, 2), dtype=np.float32) * 2.2 - 1.1).astype(np.float32))
    cot = mx.array(rng.standard_normal((2, 128, 128, 64), dtype=np.float32))
    fwd = median_ms(lambda: mx.eval(seed.grid_sample(x, g)), reps=7)
    loss_k = lambda x, g: mx.sum(seed.grid_sample(x, g) * cot)  # noqa: E731
    # d/dx (mx.grad's default): through the reference d/dgrid is refused, as by
    # MLX (it gathers at indices computed from the grid).
    loss_r = lambda x, g: mx.sum(seed.grid_sample_ref(x, g) * cot)  # noqa: E731
    gk = median_ms(lambda: mx.eval(mx.grad(loss_k)(x, g)), reps=7)
    gr = median_ms(lambda: mx.eval(mx.grad(loss_r)(x, g)), reps=7)
    print(f"{mx.__file__}: forward kernel {fwd:.2f} ms, grad via VJP kernel {gk:.2f} ms, "
          f"autodiff {gr:.2f} ms, kernel {gr / gk:.2f}x faster")


if __name__ == "__main__":
    main()
