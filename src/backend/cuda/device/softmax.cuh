// Softmax and logsumexp over the last axis of a row-contiguous input.
//   row_warp:  one warp per row, K elements per lane held in registers
//              (rows of up to 32 * K elements);
//   row_block: one block of 1024 threads per row, K elements per thread in
//              registers (rows of up to 1024 * K elements);
//   row_loop:  one block per row, any length: the row is read once for its
//              max, once for its sum of exponentials, and (softmax) once more
//              to write, so long rows cost three reads instead of one.
// The first two read each element once and write it once: softmax at the
// memory's speed. All compute in Acc (float, or double for float64) and round
// once at the end. The max is the Reduce kernels' (NaN wins), and the shift
// is the composite ops' (src/ops/reduction.cpp), so the results agree with
// the unfused graph up to rounding: a row holding +inf or NaN gives NaN
// (softmax); logsumexp shifts by 0 where the max is infinite.
#pragma once

#include "backend/common/reduce_ops.h"
#include "kernel_common.cuh"

namespace alloy {

enum class RowSoftmaxOp { Softmax, LogSumExp };

namespace softmax_detail {

template <typename Acc>
__device__ __forceinline__ Acc exp_acc(Acc v) {
  if constexpr (std::is_same_v<Acc, double>) return ::exp(v);
  else return ::expf(v);
}
template <typename Acc>
__device__ __forceinline__ Acc log_acc(Acc v) {
  if constexpr (std::is_same_v<Acc, double>) return ::log(v);
  else return ::logf(v);
}

struct MaxOf {
  template <typename A>
  __device__ __forceinline__ A operator()(A a, A b) const { return reduce::Fn<ReduceOp::Max>()(a, b); }
};
struct SumOf {
  template <typename A>
  __device__ __forceinline__ A operator()(A a, A b) const { return a + b; }
};

// Every lane of the warp gets the fold of the 32 lanes' values.
template <typename F, typename Acc>
__device__ __forceinline__ Acc warp_all(Acc v, F fn) {
#pragma unroll
  for (int d = 16; d > 0; d /= 2) v = fn(v, __shfl_xor_sync(0xffffffffu, v, d));
  return v;
}

// Every thread of the block gets the fold of all threads' values.
template <typename F, typename Acc>
__device__ __forceinline__ Acc block_all(Acc v, F fn) {
  __shared__ Acc partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
  v = warp_all(v, fn);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = partial[0];
  for (int w = 1; w < warps; ++w) v = fn(v, partial[w]);
  __syncthreads();  // `partial` is reused by the next call
  return v;
}

template <bool Warp, typename F, typename Acc>
__device__ __forceinline__ Acc group_all(Acc v, F fn) {
  if constexpr (Warp) return warp_all(v, fn);
  else return block_all(v, fn);
}

// The shift logsumexp subtracts: the max, or 0 where it is infinite.
template <typename Acc>
__device__ __forceinline__ Acc lse_shift(Acc m) {
  return math::isinf(m) ? Acc(0) : m;
}

// One row held in registers by a group of G threads (a warp or the block):
// element j = lane + G * k lives in v[k].
template <RowSoftmaxOp Op, bool Warp, int K, typename T, typename Acc>
__device__ __forceinline__ void row_in_registers(const T* in, T* out, int64_t row, int64_t n, int lane, int G) {
  const T* x = in + row * n;
  Acc v[K];
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int64_t j = lane + int64_t(G) * k;
    v[k] = j < n ? cast_value<Acc>(x[j]) : reduce::Fn<ReduceOp::Max>::template identity<Acc>();
  }
  Acc m = reduce::Fn<ReduceOp::Max>::template identity<Acc>();
#pragma unroll
  for (int k = 0; k < K; ++k) m = MaxOf()(m, v[k]);
  m = group_all<Warp>(m, MaxOf());
  const Acc shift = Op == RowSoftmaxOp::Softmax ? m : lse_shift(m);
  Acc s = 0;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int64_t j = lane + int64_t(G) * k;
    v[k] = exp_acc(v[k] - shift);
    if (j < n) s += v[k];
  }
  s = group_all<Warp>(s, SumOf());
  if constexpr (Op == RowSoftmaxOp::Softmax) {
    T* y = out + row * n;
    const Acc r = Acc(1) / s;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int64_t j = lane + int64_t(G) * k;
      if (j < n) y[j] = cast_value<T>(v[k] * r);
    }
  } else if (lane == 0) {
    out[row] = cast_value<T>(log_acc(s) + shift);
  }
}

}  // namespace softmax_detail

// Blocks of 256 threads, one row per warp.
template <RowSoftmaxOp Op, typename T, typename Acc, int K>
__device__ __forceinline__ void softmax_row_warp(const T* in, T* out, int64_t n_rows, int64_t n) {
  const int warps = blockDim.x / 32;
  for (int64_t row = int64_t(blockIdx.x) * warps + threadIdx.x / 32; row < n_rows; row += int64_t(gridDim.x) * warps)
    softmax_detail::row_in_registers<Op, true, K, T, Acc>(in, out, row, n, threadIdx.x % 32, 32);
}

// Blocks of 1024 threads, one row per block.
template <RowSoftmaxOp Op, typename T, typename Acc, int K>
__device__ __forceinline__ void softmax_row_block(const T* in, T* out, int64_t n_rows, int64_t n) {
  for (int64_t row = blockIdx.x; row < n_rows; row += gridDim.x)
    softmax_detail::row_in_registers<Op, false, K, T, Acc>(in, out, row, n, threadIdx.x, blockDim.x);
}

// Blocks of 1024 threads, one row per block, rows of any length.
template <RowSoftmaxOp Op, typename T, typename Acc>
__device__ __forceinline__ void softmax_row_loop(const T* in, T* out, int64_t n_rows, int64_t n) {
  using namespace softmax_detail;
  for (int64_t row = blockIdx.x; row < n_rows; row += gridDim.x) {
    const T* x = in + row * n;
    Acc m = reduce::Fn<ReduceOp::Max>::template identity<Acc>();
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) m = MaxOf()(m, cast_value<Acc>(x[j]));
    m = block_all(m, MaxOf());
    const Acc shift = Op == RowSoftmaxOp::Softmax ? m : lse_shift(m);
    Acc s = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) s += exp_acc(cast_value<Acc>(x[j]) - shift);
    s = block_all(s, SumOf());
    if constexpr (Op == RowSoftmaxOp::Softmax) {
      T* y = out + row * n;
      const Acc r = Acc(1) / s;
      for (int64_t j = threadIdx.x; j < n; j += blockDim.x) y[j] = cast_value<T>(exp_acc(cast_value<Acc>(x[j]) - shift) * r);
    } else if (threadIdx.x == 0) {
      out[row] = cast_value<T>(log_acc(s) + shift);
    }
  }
}

}  // namespace alloy

#define ALLOY_KERNEL_softmax_warp(OP, T, Acc, K)                                                               \
  extern "C" __global__ void __launch_bounds__(256) softmax_warp(const T* in, T* out, int64_t rows, int64_t n) { \
    alloy::softmax_row_warp<OP, T, Acc, K>(in, out, rows, n);                                                   \
  }
#define ALLOY_KERNEL_softmax_block(OP, T, Acc, K)                                                                \
  extern "C" __global__ void __launch_bounds__(1024) softmax_block(const T* in, T* out, int64_t rows, int64_t n) { \
    alloy::softmax_row_block<OP, T, Acc, K>(in, out, rows, n);                                                    \
  }
#define ALLOY_KERNEL_softmax_loop(OP, T, Acc)                                                                   \
  extern "C" __global__ void __launch_bounds__(1024) softmax_loop(const T* in, T* out, int64_t rows, int64_t n) { \
    alloy::softmax_row_loop<OP, T, Acc>(in, out, rows, n);                                                       \
  }
