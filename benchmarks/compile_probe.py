"""Prints the milliseconds from building to evaluating the seed's grid_sample
kernel once, in this process: a compile when $ALLOY_CACHE_DIR is empty, a
disk-cache load when an earlier process filled it (bench_gpu.py runs it in
fresh processes: three compiles, then five loads).
The time is of the first launch minus a second launch of the same kernel, so
it counts compile/load only.

Before timing, the process does only what any GPU program has done by then:
the device context exists and the inputs are on the device. No other kernel
has run, so the first-use costs of the kernel path are in the figure: for a
compile, loading and starting NVRTC; for a load, hashing, reading the cache
and the driver's first module load. With --breakdown, stderr gets the
build (node, translation) and eval (cubin, module load, launch) parts.
"""
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
mx.eval(x, g)  # the context and the inputs' transfer, nothing compiled
mx.synchronize()


def timed_call():
    t0 = time.perf_counter()
    out = seed.grid_sample(x, g)
    t1 = time.perf_counter()
    mx.eval(out)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1


first_build, first_eval = timed_call()
second_build, second_eval = timed_call()
print(f"{(first_build + first_eval - second_build - second_eval) * 1e3:.3f}")
if "--breakdown" in sys.argv:
    print(f"build {first_build * 1e3:.3f} ms then {second_build * 1e3:.3f}; "
          f"eval {first_eval * 1e3:.3f} ms then {second_eval * 1e3:.3f}", file=sys.stderr)
