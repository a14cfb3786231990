"""Prints the milliseconds from building to evaluating the seed's grid_sample
kernel once, in this process: a compile when $ALLOY_CACHE_DIR is empty, a
disk-cache load when an earlier process filled it (bench_gpu.py runs it twice).
The time is of the first launch minus a second launch of the same kernel, so
it counts compile/load only."""
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples" / "seeds"))
import alloy.core as mx  # noqa: E402
import grid_sample as seed  # noqa: E402

mx.set_default_device(mx.gpu if mx.is_available(mx.gpu) else mx.cpu)
x = mx.array(np.random.default_rng(1).standard_normal((1, 8, 8, 32), dtype=np.float32))
g = mx.array(np.random.default_rng(2).random((1, 4, 4, 2), dtype=np.float32) * 2 - 1)
mx.eval(x + 0 if hasattr(x, "__add__") else x)
t0 = time.perf_counter()
mx.eval(seed.grid_sample(x, g))
first = time.perf_counter() - t0
t0 = time.perf_counter()
mx.eval(seed.grid_sample(x, g))
second = time.perf_counter() - t0
print(f"{(first - second) * 1e3:.3f}")
