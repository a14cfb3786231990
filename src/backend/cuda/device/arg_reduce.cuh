// Index (uint32) of the first max/min along one axis of a row-contiguous
// input seen as [outer, n, inner]. Partial results combine by value with
// ties (and NaN against NaN) going to the lower index, which is what the
// CPU's sequential scan finds.
#pragma once

#include "backend/common/reduce_ops.h"
#include "kernel_common.cuh"

namespace alloy {

template <ArgReduceOp Op, typename C>
__device__ __forceinline__ void arg_combine(C& v, uint32_t& i, C ov, uint32_t oi) {
  const reduce::ArgBetter<Op> better;
  if (better(ov, v) || (!better(v, ov) && oi < i)) {
    v = ov;
    i = oi;
  }
}

// inner == 1: one block per row.
template <ArgReduceOp Op, typename T>
__device__ __forceinline__ void arg_row(const T* in, uint32_t* out, int64_t n_rows, int64_t n) {
  using C = math::compute_t<T>;
  __shared__ alignas(16) unsigned char raw[32 * sizeof(C)];
  __shared__ uint32_t idx[32];
  C* vals = reinterpret_cast<C*>(raw);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  for (int64_t row = blockIdx.x; row < n_rows; row += gridDim.x) {
    const T* p = in + row * n;
    C v = C(p[0]);
    uint32_t i = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) arg_combine<Op>(v, i, C(p[j]), uint32_t(j));
    for (int d = 16; d > 0; d /= 2) arg_combine<Op>(v, i, shfl_down(v, d), shfl_down(i, d));
    if (lane == 0) {
      vals[warp] = v;
      idx[warp] = i;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int w = 1; w < warps; ++w) arg_combine<Op>(v, i, vals[w], idx[w]);
      out[row] = i;
    }
    __syncthreads();
  }
}

// inner > 1: one thread per output, walking n.
template <ArgReduceOp Op, typename T>
__device__ __forceinline__ void arg_col(const T* in, uint32_t* out, int64_t n_out, int64_t n, int64_t inner) {
  using C = math::compute_t<T>;
  const reduce::ArgBetter<Op> better;
  for (int64_t e = global_thread(); e < n_out; e += grid_threads()) {
    const int64_t o = e / inner, k = e - o * inner;
    const T* p = in + o * n * inner + k;
    C best = C(p[0]);
    uint32_t bi = 0;
    for (int64_t j = 1; j < n; ++j) {
      C v = C(p[j * inner]);
      if (better(v, best)) {
        best = v;
        bi = uint32_t(j);
      }
    }
    out[e] = bi;
  }
}

}  // namespace alloy

#define ALLOY_KERNEL_arg_row(OP, T)                                                                   \
  extern "C" __global__ void arg_row(const T* in, uint32_t* out, int64_t n_rows, int64_t n) {         \
    alloy::arg_row<OP, T>(in, out, n_rows, n);                                                        \
  }
#define ALLOY_KERNEL_arg_col(OP, T)                                                                   \
  extern "C" __global__ void arg_col(const T* in, uint32_t* out, int64_t n_out, int64_t n, int64_t inner) { \
    alloy::arg_col<OP, T>(in, out, n_out, n, inner);                                                  \
  }
