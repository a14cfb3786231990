"""First-use compile time of a bounds-checked metal_kernel against the same
kernel unchecked, in fresh processes with an empty cache (issue 4's checks
must not make a kernel slow to build). The kernel has the shape of jang's
TurboQuant gather GEMV: 20 accumulators a thread and `#pragma unroll`ed
loops for three code widths (2, 3 and 4 bits: 16, 10 and 8 codes a word,
each read subscripting a codebook for 20 rows), about 700 checked subscripts
after unrolling.

With --cuda each compile is also made for CUDA by NVRTC (ALLOY_CHECK_CUDA=1,
as the test suite does on a machine without a GPU).

Usage: python benchmarks/bench_bounds_compile.py [--cuda] [--runs 3]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

OPT = 20


def width_block(bits):
    """The unrolled reads of one code width (jang has one per width)."""
    return f"""
        if (bits == {bits}u) {{
            #pragma unroll
            for (uint k = 0; k < {32 // bits}u; k++) {{
                float xv = x[p * 16u + k];
                #pragma unroll
                for (uint o = 0; o < {OPT}; o++) acc[o] += xv * codebook[(pv[o] >> ({bits}u * k)) & {(1 << bits) - 1}u];
            }}
        }}"""


SOURCE = f"""
    uint lane = thread_position_in_grid.x % 32u;
    uint row0 = (thread_position_in_grid.x / 32u) * {OPT}u;
    uint bits = meta[0], cols = meta[1];
    float acc[{OPT}];
    #pragma unroll
    for (uint o = 0; o < {OPT}; o++) acc[o] = 0.0f;
    for (uint p = lane; p < cols; p += 32u) {{
        uint pv[{OPT}];
        #pragma unroll
        for (uint o = 0; o < {OPT}; o++) pv[o] = packed[(row0 + o) * cols + p];{width_block(2)}{width_block(3)}{width_block(4)}
    }}
    #pragma unroll
    for (uint o = 0; o < {OPT}; o++) {{
        float s = simd_sum(acc[o]);
        if (lane == 0) out[row0 + o] = s;
    }}
"""

CHILD = """
import sys, time
import numpy as np
import alloy.core as mx
src = sys.argv[1]
rows, cols = 40, 8
k = mx.fast.metal_kernel(name="bounds_compile", input_names=["x", "packed", "codebook", "meta"],
                         output_names=["out"], source=src)
args = dict(inputs=[mx.ones((cols * 16,)), mx.zeros((rows, cols), dtype=mx.uint32), mx.ones((16,)), mx.array([2, cols], dtype=mx.uint32)],
            grid=(32 * rows // 20, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(rows,)],
            output_dtypes=[mx.float32])
t = time.perf_counter()
mx.eval(k(**args)[0])
first = time.perf_counter() - t
t = time.perf_counter()
mx.eval(k(**args)[0])
print(first - (time.perf_counter() - t))
"""


def compile_seconds(checked, cuda):
    env = dict(os.environ, ALLOY_CACHE_DIR=tempfile.mkdtemp(prefix="alloy-bc-"),
               ALLOY_BOUNDS_CHECK="1" if checked else "0",
               ALLOY_CHECK_CUDA="1" if cuda else "0")
    r = subprocess.run([sys.executable, "-c", CHILD, SOURCE], env=env,
                       capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(r.stderr[-3000:])
    return float(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuda", action="store_true")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    plain = min(compile_seconds(False, a.cuda) for _ in range(a.runs))
    checked = min(compile_seconds(True, a.cuda) for _ in range(a.runs))
    what = "g++ and NVRTC" if a.cuda else "g++"
    print(f"| {what} | unchecked {plain:.2f} s | bounds-checked {checked:.2f} s | ratio {checked / plain:.2f} |")


if __name__ == "__main__":
    main()
