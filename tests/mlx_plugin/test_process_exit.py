"""A script that ends right after its first kernel exits cleanly.

On MLX's CUDA backend the first kernel starts Alloy's GPU backend, whose
background thread loads cuBLAS and makes its handle, for about a hundred
milliseconds.
alloy.mlx imports Alloy's package but not alloy.core, so until alloy.mlx registered its own wait at Python's
shutdown, such a script was torn down under that thread: SIGSEGV after its
last line (H100, mlx-cuda-13 0.32.4; the seed past the edge in
test_seeds.py found it). On the CPU backend no thread starts and the same
script checks the plain path.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

SCRIPT = """
import sys
import numpy as np
import mlx.core as mx
import alloy.mlx
if sys.argv[1] == "gpu":
    mx.set_default_device(mx.gpu)
x = np.random.default_rng(int(sys.argv[2])).standard_normal(4096).astype(np.float32)
k = mx.fast.metal_kernel(name="twice_plus_one", input_names=["inp"], output_names=["out"],
                         source="uint i = thread_position_in_grid.x; out[i] = 2.0f * inp[i] + 1.0f;")
out = k(inputs=[mx.array(x)], grid=(4096, 1, 1), threadgroup=(256, 1, 1), output_shapes=[(4096,)],
        output_dtypes=[mx.float32])[0]
np.save(sys.argv[3], np.array(out))
np.save(sys.argv[4], x)
"""


def test_script_ending_after_its_first_kernel_exits_cleanly(rng, tmp_path):
    device = os.environ.get("ALLOY_TEST_DEVICE", "cpu")
    out_file, x_file = str(tmp_path / "out.npy"), str(tmp_path / "x.npy")
    for run in range(3):  # three fresh processes (the crash came in every run seen)
        r = subprocess.run([sys.executable, "-c", SCRIPT, device, str(int(rng.integers(2**31))), out_file, x_file],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"run {run} on {device} exited with {r.returncode}:\n{r.stderr[-3000:]}"
        x = np.load(x_file).astype(np.float64)
        np.testing.assert_allclose(np.load(out_file), 2 * x + 1, rtol=1e-6, atol=1e-6)
