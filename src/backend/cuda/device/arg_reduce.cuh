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

// One thread's share of [lo, hi): elements t, t + nt, ... in rising order,
// so a strictly better value replaces the best and a tie keeps the earlier.
// Float rows that lie 16-byte aligned are read four elements at a time
// (thread t takes chunks t, t + nt, ...: still rising).
template <ArgReduceOp Op, typename T, typename C>
__device__ __forceinline__ void arg_scan(const T* p, int64_t lo, int64_t hi, int t, int nt, C& v, uint32_t& i) {
  const reduce::ArgBetter<Op> better;
  auto take = [&](C x, int64_t j) {
    if (better(x, v)) {
      v = x;
      i = uint32_t(j);
    }
  };
  int64_t j = lo + t;
  if constexpr (sizeof(T) == 4) {
    if (reinterpret_cast<uintptr_t>(p + lo) % 16 == 0) {
      const Vec<T, 4>* chunks = reinterpret_cast<const Vec<T, 4>*>(p + lo);
      const int64_t whole = (hi - lo) / 4;
      int64_t c = t;
#pragma unroll 2
      for (; c < whole; c += nt) {
        const Vec<T, 4> q = chunks[c];
#pragma unroll
        for (int w = 0; w < 4; ++w) take(C(q.v[w]), lo + 4 * c + w);
      }
      // The tail after the whole chunks, one element per thread.
      j = lo + 4 * whole + t;
    }
  }
#pragma unroll 4
  for (; j < hi; j += nt) take(C(p[j]), j);
}

// Combines every thread's (v, i) of the block; thread 0 gets the result.
template <ArgReduceOp Op, typename C>
__device__ __forceinline__ void arg_block_combine(C& v, uint32_t& i) {
  __shared__ alignas(16) unsigned char raw[32 * sizeof(C)];
  __shared__ uint32_t idx[32];
  C* vals = reinterpret_cast<C*>(raw);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  for (int d = 16; d > 0; d /= 2) arg_combine<Op>(v, i, shfl_down(v, d), shfl_down(i, d));
  if (lane == 0) {
    vals[warp] = v;
    idx[warp] = i;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < warps; ++w) arg_combine<Op>(v, i, vals[w], idx[w]);
  }
  __syncthreads();  // the arrays are reused by the next call
}

// Where a pass writes: the final indices, or (a split axis) each split's
// best value and index, [split][output], merged by arg_merge.
template <typename C>
struct ArgOut {
  uint32_t* out;
  C* part_val;
  uint32_t* part_idx;
  __device__ __forceinline__ void put(int64_t e, int64_t n_out, C v, uint32_t i) const {
    if (part_val == nullptr) {
      out[e] = i;
    } else {
      part_val[int64_t(blockIdx.z) * n_out + e] = v;
      part_idx[int64_t(blockIdx.z) * n_out + e] = i;
    }
  }
};

// inner == 1: one block per (row, split of the row, gridDim.z splits of
// `split_len` elements); four loads in flight per thread.
template <ArgReduceOp Op, typename T>
__device__ __forceinline__ void arg_row(const T* in, ArgOut<math::compute_t<T>> o, int64_t n_rows, int64_t n,
                                        int64_t split_len) {
  using C = math::compute_t<T>;
  const int64_t lo = int64_t(blockIdx.z) * split_len, hi = lo + split_len < n ? lo + split_len : n;
  for (int64_t row = blockIdx.x; row < n_rows; row += gridDim.x) {
    const T* p = in + row * n;
    C v = C(p[lo]);
    uint32_t i = uint32_t(lo);
    arg_scan<Op>(p, lo, hi, threadIdx.x, blockDim.x, v, i);
    arg_block_combine<Op>(v, i);
    if (threadIdx.x == 0) o.put(row, n_rows, v, i);
  }
}

// inner > 1: blocks of (32, 8): 32 consecutive outputs of one outer position
// (blockIdx.y strides over them), 8 thread rows walking the axis, combined in
// shared memory; gridDim.z splits the axis.
template <ArgReduceOp Op, typename T>
__device__ __forceinline__ void arg_col(const T* in, ArgOut<math::compute_t<T>> o, int64_t n_outer, int64_t n,
                                        int64_t inner, int64_t split_len) {
  using C = math::compute_t<T>;
  __shared__ alignas(16) unsigned char raw[8 * 33 * sizeof(C)];
  __shared__ uint32_t idx[8 * 33];
  C* vals = reinterpret_cast<C*>(raw);
  const int64_t k = int64_t(blockIdx.x) * 32 + threadIdx.x;
  const int64_t lo = int64_t(blockIdx.z) * split_len, hi = lo + split_len < n ? lo + split_len : n;
  for (int64_t q = blockIdx.y; q < n_outer; q += gridDim.y) {
    C v{};
    uint32_t i = 0xffffffffu;  // no element yet: any real one wins
    if (k < inner) {
      const T* p = in + q * n * inner + k;
      const int64_t first = lo + threadIdx.y;
      if (first < hi) {
        v = C(p[first * inner]);
        i = uint32_t(first);
      }
      const reduce::ArgBetter<Op> better;
      const int64_t step = blockDim.y;
      int64_t j = first + step;
      // Eight rows loaded before they are compared: enough loads in flight to
      // keep the memory busy. A thread's indices rise: a tie keeps the earlier.
      for (; j + 7 * step < hi; j += 8 * step) {
        C x[8];
#pragma unroll
        for (int u = 0; u < 8; ++u) x[u] = C(p[(j + u * step) * inner]);
#pragma unroll
        for (int u = 0; u < 8; ++u) {
          if (better(x[u], v)) {
            v = x[u];
            i = uint32_t(j + u * step);
          }
        }
      }
      for (; j < hi; j += step) {
        const C x = C(p[j * inner]);
        if (better(x, v)) {
          v = x;
          i = uint32_t(j);
        }
      }
    }
    vals[threadIdx.y * 33 + threadIdx.x] = v;
    idx[threadIdx.y * 33 + threadIdx.x] = i;
    __syncthreads();
    if (threadIdx.y == 0 && k < inner) {
      for (int r = 1; r < blockDim.y; ++r) {
        const uint32_t ri = idx[r * 33 + threadIdx.x];
        if (ri == 0xffffffffu) continue;
        if (i == 0xffffffffu) {
          v = vals[r * 33 + threadIdx.x];
          i = ri;
        } else {
          arg_combine<Op>(v, i, vals[r * 33 + threadIdx.x], ri);
        }
      }
      o.put(q * inner + k, n_outer * inner, v, i);
    }
    __syncthreads();
  }
}

// The splits' partial results, one block per output (blockIdx.x strides):
// arg_combine keeps the better value or, on a tie, the lower index, so the
// partials combine in any grouping to the sequential scan's answer.
template <ArgReduceOp Op, typename T>
__device__ __forceinline__ void arg_merge(const math::compute_t<T>* part_val, const uint32_t* part_idx, uint32_t* out,
                                          int64_t n_out, int64_t splits) {
  using C = math::compute_t<T>;
  for (int64_t e = blockIdx.x; e < n_out; e += gridDim.x) {
    // Every thread starts from split 0 (a real partial), then folds its share.
    C v = part_val[e];
    uint32_t i = part_idx[e];
    for (int64_t s = threadIdx.x; s < splits; s += blockDim.x)
      arg_combine<Op>(v, i, part_val[s * n_out + e], part_idx[s * n_out + e]);
    arg_block_combine<Op>(v, i);
    if (threadIdx.x == 0) out[e] = i;
  }
}

}  // namespace alloy

#define ALLOY_KERNEL_arg_row(OP, T)                                                                              \
  extern "C" __global__ void __launch_bounds__(256) arg_row(const T* in, alloy::ArgOut<alloy::math::compute_t<T>> o, \
                                                            int64_t n_rows, int64_t n, int64_t split_len) {       \
    alloy::arg_row<OP, T>(in, o, n_rows, n, split_len);                                                          \
  }
#define ALLOY_KERNEL_arg_col(OP, T)                                                                              \
  extern "C" __global__ void __launch_bounds__(256) arg_col(const T* in, alloy::ArgOut<alloy::math::compute_t<T>> o, \
                                                            int64_t n_outer, int64_t n, int64_t inner,            \
                                                            int64_t split_len) {                                  \
    alloy::arg_col<OP, T>(in, o, n_outer, n, inner, split_len);                                                  \
  }
#define ALLOY_KERNEL_arg_merge(OP, T)                                                                        \
  extern "C" __global__ void __launch_bounds__(256) arg_merge(const alloy::math::compute_t<T>* part_val, const uint32_t* part_idx,   \
                                       uint32_t* out, int64_t n_out, int64_t splits) {                       \
    alloy::arg_merge<OP, T>(part_val, part_idx, out, n_out, splits);                                         \
  }
