#!/usr/bin/env bash
# On a 2-GPU device machine (kind nvidia-h200-x2), after scripts/gpu_check.sh
# built the packages (STEPS=mlx_plugin_gpu) and mlx-cuda-13 is in /tmp/mlxsite:
# two ranks of MLX's distributed run over NCCL, each running a Metal kernel
# through alloy.mlx, then all_sum (tests/mlx_plugin/distributed_all_sum.py).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
export PYTHONPATH=/tmp/mlxsite:/tmp/pkg:/tmp/site LD_LIBRARY_PATH="$root/.gpu/lib:${LD_LIBRARY_PATH:-}"
export ALLOY_CACHE_DIR=/tmp/alloy-cache
script=tests/mlx_plugin/distributed_all_sum.py
# MLX's launcher (python -m mlx._distributed_utils.launch --backend nccl -n 2)
# returned 0 on the device machine without starting a rank (its ranks are
# remote processes); the ranks get the environment it gives them, set here.
pids=()
for rank in 0 1; do
  MLX_RANK=$rank MLX_WORLD_SIZE=2 NCCL_HOST_IP=127.0.0.1 NCCL_PORT=29517 CUDA_VISIBLE_DEVICES=$rank \
    timeout 300 python3 "$script" & pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
exit $rc
