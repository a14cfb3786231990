"""One rank of MLX's distributed run (NCCL backend, one GPU per rank): each
rank runs a Metal kernel through alloy.mlx on its GPU, then the ranks
all_sum the results. Launched by scripts/gpu_mlx_distributed.sh, under
the environment MLX's NCCL launcher sets (MLX_RANK, MLX_WORLD_SIZE,
NCCL_HOST_IP, NCCL_PORT, CUDA_VISIBLE_DEVICES)."""
import sys

import numpy as np

import mlx.core as mx

import alloy.mlx  # noqa: F401

world = mx.distributed.init(backend="nccl", strict=True)
rank, size = world.rank(), world.size()
assert size >= 2, f"expected at least 2 ranks, got {size}"
mx.set_default_device(mx.gpu)

seed = 1234  # the same inputs on every rank, so each knows the expected sum
x = mx.array(np.random.default_rng(seed).standard_normal(4096).astype(np.float32))
kernel = mx.fast.metal_kernel(
    name="scaled_by_rank", input_names=["inp", "factor"], output_names=["out"],
    source="uint i = thread_position_in_grid.x; out[i] = metal::exp(inp[i]) * factor;")
(y,) = kernel(inputs=[x, mx.array(float(rank + 1))], grid=(x.size, 1, 1), threadgroup=(256, 1, 1),
              output_shapes=[x.shape], output_dtypes=[mx.float32])
total = mx.distributed.all_sum(y)
want = np.exp(np.array(x, dtype=np.float64)) * sum(r + 1 for r in range(size))
np.testing.assert_allclose(np.array(total), want, rtol=1e-5, atol=1e-5)
print(f"rank {rank}/{size}: Metal kernel through alloy.mlx + all_sum over NCCL matches "
      f"(max |err| {np.abs(np.array(total) - want).max():.2e})", flush=True)
sys.exit(0)
