#!/usr/bin/env bash
# Which sequence, if any, gives a process a working CUDA context again after
# a sticky fault (an illegal address)? Builds a small driver-API program and
# runs it once per strategy, each in its own process:
#   primary          cuDevicePrimaryCtxReset, then retain and make current
#   primary_thread   the same on a fresh thread with no CUDA state
#   primary_release  release our retain first, then reset and retain
#   created          a context of our own: cuCtxDestroy, then cuCtxCreate
#   created_thread   the same on a fresh thread
# Each prints every driver call's result and "RESULT <strategy>: REBUILT|FAILED".
# Measured 2026-11-27 on an H200, driver 580.159.04: FAILED for all five
# (the retain or create after the fault returns CUDA_ERROR_ILLEGAL_ADDRESS),
# which is why src/backend/cuda/fault.cpp refuses GPU work after such a fault.
# Needs nvcc here and a GPU where it runs; run from anywhere.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="${TMPDIR:-/tmp}/alloy-context-reset"
mkdir -p "$work"
cuda="${CUDA_HOME:-/usr/local/cuda}"
"$cuda/bin/nvcc" -ptx -arch=compute_80 "$here/context_reset_kernels.cu" -o "$work/k.ptx"
{ echo 'R"PTX('; cat "$work/k.ptx"; echo ')PTX"'; } > "$work/context_reset_kernels.ptx.inc"
g++ -O1 -std=c++17 -I"$cuda/include" -I"$work" "$here/context_reset.cpp" -L"$cuda/lib64/stubs" -lcuda -lpthread \
  -o "$work/context_reset"
for strategy in primary primary_thread primary_release created created_thread; do
  timeout 60 "$work/context_reset" "$strategy" || echo "RESULT $strategy: exited with $?"
done
