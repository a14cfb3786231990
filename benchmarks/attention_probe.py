"""One launch of the tiled flash attention (examples/metal4/
flash_attention_tiled.metal) after a warm-up, for a profiler to read its
counters, e.g.
  ncu --clock-control none --kernel-name alloy_kernel_main --launch-skip 1 \
      --launch-count 1 --section LaunchStats --section WarpStateStats \
      python3 benchmarks/attention_probe.py 128 8 64 [S]
(head dimension, SIMD groups, keys per block; B 4 H 32 S 4096 as the bench).
"""
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples" / "metal4"))
import alloy.core as mx  # noqa: E402
import attention_driver as fa  # noqa: E402

d, nsimd, bk = (int(x) for x in sys.argv[1:4])
S = int(sys.argv[4]) if len(sys.argv) > 4 else 4096
mx.set_default_device(mx.gpu)
rng = np.random.default_rng(0)
q, k, v = (mx.array(rng.standard_normal((128, S, d)).astype(np.float16)) for _ in range(3))
for _ in range(2):
    mx.eval(fa.run_tiled(q, k, v, 1.0 / np.sqrt(d), nsimd=nsimd, bk=bk))
print("done", d, nsimd, bk, S)
