"""An installed Alloy on a machine without a C++ compiler (a wheel on a GPU
server): built-in ops need none; a metal_kernel on the CPU, which must
compile its C++ translation, says which compiler it could not run and how to
name another."""
import os
import subprocess
import sys

PROGRAM = r"""
import alloy.core as mx
print((mx.ones(3) * 2 + 1).tolist(), (mx.ones((3, 3)) @ mx.ones((3, 2))).tolist()[0],
      round(mx.softmax(mx.arange(4.0)).sum().item(), 5))
k = mx.fast.metal_kernel(name="k", input_names=["a"], output_names=["o"], source="o[0] = a[0] + 1;")
try:
    k(inputs=[mx.ones(1)], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(1,)],
      output_dtypes=[mx.float32], stream=mx.cpu)[0].tolist()
except RuntimeError as e:
    print("ERROR", e)
"""


def test_builtin_ops_need_no_compiler_and_kernels_say_what_is_missing(tmp_path):
    env = dict(os.environ, ALLOY_CXX="/nonexistent/c++", ALLOY_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("ALLOY_CHECK_CUDA", None)
    r = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "[3.0, 3.0, 3.0] [3.0, 3.0] 1.0"
    assert lines[1].startswith("ERROR") and "/nonexistent/c++" in lines[1] and "ALLOY_CXX" in r.stdout
