// Cumulative sum/product/max/min along one axis of a row-contiguous input
// seen as [outer, n, inner], forward or reversed, inclusive or exclusive.
//   scan_row (inner == 1): one block per row; chunks of blockDim * 4
//     elements: each thread scans its 4, a block scan of the thread totals
//     (warp shuffles, then shared memory) gives each its prefix, and a carry
//     runs from chunk to chunk;
//   scan_col (inner > 1): one thread per column, walking n.
#pragma once

#include "backend/common/scan_ops.h"
#include "kernel_common.cuh"

namespace alloy {

template <ScanOp Op, typename T>
__device__ __forceinline__ void scan_row(const T* in, T* out, int64_t n_rows, int64_t n, bool reverse,
                                         bool inclusive) {
  using Acc = scan_acc_t<Op, T>;
  constexpr int kItems = 4;
  const scan_fn_t<Op> fn;
  const Acc identity = scan_fn_t<Op>::template identity<Acc>();
  __shared__ alignas(16) unsigned char raw[33 * sizeof(Acc)];
  Acc* warp_totals = reinterpret_cast<Acc*>(raw);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  for (int64_t row = blockIdx.x; row < n_rows; row += gridDim.x) {
    const T* x = in + row * n;
    T* y = out + row * n;
    Acc carry = identity;
    for (int64_t chunk = 0; chunk < n; chunk += int64_t(blockDim.x) * kItems) {
      const int64_t first = chunk + int64_t(threadIdx.x) * kItems;
      Acc v[kItems];
      Acc total = identity;
#pragma unroll
      for (int q = 0; q < kItems; ++q) {
        const int64_t j = first + q;
        v[q] = j < n ? cast_value<Acc>(x[reverse ? n - 1 - j : j]) : identity;
        total = fn(total, v[q]);
      }
      // Inclusive scan of the thread totals across the warp.
      Acc incl = total;
#pragma unroll
      for (int d = 1; d < 32; d *= 2) {
        Acc o = shfl_up(incl, d);
        if (lane >= d) incl = fn(o, incl);
      }
      if (lane == 31) warp_totals[warp] = incl;
      __syncthreads();
      if (warp == 0) {
        Acc w = lane < warps ? warp_totals[lane] : identity;
#pragma unroll
        for (int d = 1; d < 32; d *= 2) {
          Acc o = shfl_up(w, d);
          if (lane >= d) w = fn(o, w);
        }
        if (lane < warps) warp_totals[lane] = w;  // inclusive over warps
        if (lane == warps - 1) warp_totals[32] = w;  // the chunk's total
      }
      __syncthreads();
      Acc excl = shfl_up(incl, 1);  // exclusive within the warp
      if (lane == 0) excl = identity;
      Acc prefix = warp > 0 ? fn(warp_totals[warp - 1], excl) : excl;
      prefix = fn(carry, prefix);
#pragma unroll
      for (int q = 0; q < kItems; ++q) {
        const int64_t j = first + q;
        Acc next = fn(prefix, v[q]);
        if (j < n) y[reverse ? n - 1 - j : j] = cast_value<T>(inclusive ? next : prefix);
        prefix = next;
      }
      carry = fn(carry, warp_totals[32]);
      __syncthreads();
    }
  }
}

template <ScanOp Op, typename T>
__device__ __forceinline__ void scan_col(const T* in, T* out, int64_t n_cols, int64_t n, int64_t inner, bool reverse,
                                         bool inclusive) {
  using Acc = scan_acc_t<Op, T>;
  const scan_fn_t<Op> fn;
  for (int64_t e = global_thread(); e < n_cols; e += grid_threads()) {
    const int64_t o = e / inner, k = e - o * inner;
    const int64_t base = o * n * inner + k;
    Acc acc = scan_fn_t<Op>::template identity<Acc>();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t j = base + (reverse ? n - 1 - i : i) * inner;
      Acc v = cast_value<Acc>(in[j]);
      if (inclusive) {
        acc = fn(acc, v);
        out[j] = cast_value<T>(acc);
      } else {
        out[j] = cast_value<T>(acc);
        acc = fn(acc, v);
      }
    }
  }
}

}  // namespace alloy

#define ALLOY_KERNEL_scan_row(OP, T)                                                                      \
  extern "C" __global__ void __launch_bounds__(256) scan_row(const T* in, T* out, int64_t n_rows, int64_t n, \
                                                             bool reverse, bool inclusive) {              \
    alloy::scan_row<OP, T>(in, out, n_rows, n, reverse, inclusive);                                       \
  }
#define ALLOY_KERNEL_scan_col(OP, T)                                                                      \
  extern "C" __global__ void scan_col(const T* in, T* out, int64_t n_cols, int64_t n, int64_t inner,      \
                                      bool reverse, bool inclusive) {                                     \
    alloy::scan_col<OP, T>(in, out, n_cols, n, inner, reverse, inclusive);                                \
  }
