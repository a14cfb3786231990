"""One launch of a Metal 4 GEMM kernel of benchmarks/bench_metal4.py (after a
warm-up), for a profiler to read its counters, e.g.
  ncu --clock-control none --kernel-name regex:gemm --launch-skip 1 \
      --launch-count 1 --section WarpStateStats python3 \
      benchmarks/metal4_gemm_probe.py gemm_half_4 8192
(gemm_half_4/8, gemm_mxfp8_4/8 or gemm_mxfp8_relaxed_4/8: half operands, or MXFP8
codes and scales.)
"""
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples" / "metal4"))
import alloy.core as mx  # noqa: E402
import metal4_common as m4  # noqa: E402
from bench_metal4 import GEMM  # noqa: E402

name, n = sys.argv[1], int(sys.argv[2])
sg = int(name.rsplit("_", 1)[1])
mx.set_default_device(mx.gpu)
rng = np.random.default_rng(0)
if "mxfp8" in name:
    a, b = (tuple(mx.array(x) for x in m4.random_mxfp8(rng, n, n)) for _ in range(2))
else:
    a, b = (mx.array(rng.standard_normal((n, n)).astype(np.float16)) for _ in range(2))
kernel = mx.fast.metal_library(GEMM).kernel(name)
for _ in range(2):
    out = kernel(args={"A": a, "B": b, "C": ((n, n), mx.float16)}, grid=(n // 128, n // 128, 1),
                 threadgroup=(32 * sg, 1, 1), dispatch="threadgroups")[0]
    mx.eval(out)
print("done", name, n)
