"""Runaway kernels through alloy.mlx on MLX's CPU backend: an alarm whose
handler raises nothing stops an endless Metal kernel (the eval raises
RuntimeError, the process goes on and runs the next kernel), also when the
alarm rings while the kernel is still compiling on the eval's thread and
its launch has not yet reached MLX's stream thread (jit/cpu_interrupt.h's
InterruptWindow, continued on that thread). Each program runs in a process
of its own with an empty kernel cache, on MLX's CPU stream (with MLX's CUDA
backend too: `stream=mx.cpu`)."""
import os
import pathlib
import subprocess
import sys

import pytest

PYSHARED = str(pathlib.Path(__file__).resolve().parents[1] / "pyshared")

PROGRAM = r"""
import signal, sys, time
import numpy as np
import mlx.core as mx
import alloy.mlx
sys.path.insert(0, {pyshared!r})
from slow_kernels import SLOW_TO_COMPILE_HEADER, SLOW_TO_COMPILE_SPIN

spin = mx.fast.metal_kernel(name="spin_mlx", input_names=["a"], output_names=["out"],
                            source=SLOW_TO_COMPILE_SPIN, header=SLOW_TO_COMPILE_HEADER)
twice = mx.fast.metal_kernel(name="twice_mlx", input_names=["a"], output_names=["out"],
                             source="uint i = thread_position_in_grid.x; out[i] = a[i] * 2;")
kw = dict(grid=(256, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(256,)], output_dtypes=[mx.float32],
          stream=mx.cpu)
before = twice(inputs=[mx.arange(256, dtype=mx.float32)], **kw)[0]
mx.eval(before)
kept = np.array(before)
spinning = spin(inputs=[mx.ones(256)], **kw)[0]
seen = []
signal.signal(signal.SIGALRM, lambda s, f: seen.append(s))
t0 = time.monotonic()
signal.setitimer(signal.ITIMER_REAL, {alarm})
try:
    mx.eval(spinning)
    sys.exit("the endless kernel returned")
except RuntimeError as e:
    assert "stopped by SIGALRM" in str(e) and "not valid" in str(e), e
took = time.monotonic() - t0
assert seen == [signal.SIGALRM], seen
assert took < 30, took
assert (np.array(before) == kept).all()
again = twice(inputs=[mx.arange(256, dtype=mx.float32)], **kw)[0]
assert (np.array(again) == 2 * np.arange(256)).all()
print("ok", round(took, 3))
"""

# "running": an earlier process compiled the kernel into the same cache (its
# launch stopped by ALLOY_KERNEL_TIMEOUT), so the alarm (0.5 s) rings while
# the kernel spins. "compiling": the cache is empty and the alarm (0.2 s)
# rings while the host compiler works (about a second).
WARM = """
import os, sys
import mlx.core as mx
import alloy.mlx
sys.path.insert(0, {pyshared!r})
from slow_kernels import SLOW_TO_COMPILE_HEADER, SLOW_TO_COMPILE_SPIN
spin = mx.fast.metal_kernel(name="spin_mlx", input_names=["a"], output_names=["out"],
                            source=SLOW_TO_COMPILE_SPIN, header=SLOW_TO_COMPILE_HEADER)
try:
    mx.eval(spin(inputs=[mx.ones(256)], grid=(256, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(256,)],
                 output_dtypes=[mx.float32], stream=mx.cpu)[0])
    sys.exit("the endless kernel returned")
except RuntimeError as e:  # through MLX's stream thread a timeout comes back as RuntimeError
    assert "ran past its timeout of 0.5 s" in str(e), e
    print("compiled")
"""


@pytest.mark.parametrize("case,alarm", [("running", 0.5), ("compiling", 0.2)])
def test_an_alarm_stops_an_endless_kernel(tmp_path, case, alarm):
    env = dict(os.environ, ALLOY_CACHE_DIR=str(tmp_path / "cache"))
    if case == "running":
        warm = WARM.format(pyshared=PYSHARED)
        r = subprocess.run([sys.executable, "-c", warm], capture_output=True, text=True, timeout=120,
                           env=dict(env, ALLOY_KERNEL_TIMEOUT="0.5"))
        assert r.returncode == 0 and r.stdout.startswith("compiled"), r.stdout + r.stderr
    code = PROGRAM.format(pyshared=PYSHARED, alarm=alarm)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("ok"), r.stdout + r.stderr
