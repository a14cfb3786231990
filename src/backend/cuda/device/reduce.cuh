// Reductions over row-contiguous inputs whose dims the host merged into
// alternating kept/reduced groups (as the CPU backend does):
//   row_block / row_warp: the last group is reduced; each output folds
//     `run` contiguous elements per outer reduced position (a block or one
//     warp per output, warp shuffles then shared memory);
//   col: the last group is kept; 32 consecutive outputs per block column,
//     8 thread rows splitting the reduced positions, combined in shared memory.
// Both can split the reduced range over gridDim.y / gridDim.z: the partials
// (in Acc) are then reduced again by a second launch of the same kernels.
#pragma once

#include "backend/common/reduce_ops.h"
#include "kernel_common.cuh"

namespace alloy {

template <ReduceOp Op, typename Acc>
__device__ __forceinline__ Acc warp_reduce(Acc v) {
  const reduce::Fn<Op> fn;
#pragma unroll
  for (int d = 16; d > 0; d /= 2) v = fn(v, shfl_down(v, d));
  return v;
}

// Reduces one value per thread of the block; the result is valid in thread 0.
template <ReduceOp Op, typename Acc>
__device__ __forceinline__ Acc block_reduce(Acc v) {
  __shared__ alignas(16) unsigned char raw[32 * sizeof(Acc)];
  Acc* partial = reinterpret_cast<Acc*>(raw);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
  v = warp_reduce<Op>(v);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? partial[lane] : reduce::Fn<Op>::template identity<Acc>();
    v = warp_reduce<Op>(v);
  }
  __syncthreads();  // `raw` may be reused by a next call
  return v;
}


// The values a row source yields (T for a `const T*`, else Src::value_type),
// and whether they lie in memory.
template <typename Src>
struct SourceValue {
  using type = typename Src::value_type;
  static constexpr bool in_memory = false;
};
template <typename T>
struct SourceValue<const T*> {
  using type = T;
  static constexpr bool in_memory = true;
};

// Elements per chunk: a row is folded in chunks of 16 bytes of values.
template <typename V>
inline constexpr int kChunk = sizeof(V) >= 16 ? 1 : int(16 / sizeof(V));

// Folds whole chunks c, c + nt, ... below `whole` from 16-byte loads, four
// in flight; returns the first chunk it left.
template <ReduceOp Op, typename V, int W, typename Acc>
__device__ __forceinline__ int64_t fold_chunks(const Vec<V, W>* chunks, int64_t c, int64_t whole, int nt, Acc& acc) {
  const reduce::Fn<Op> fn;
  for (; c + 3 * nt < whole; c += 4 * nt) {
    const Vec<V, W> v[4] = {chunks[c], chunks[c + nt], chunks[c + 2 * nt], chunks[c + 3 * nt]};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
      for (int w = 0; w < W; ++w) acc = fn(acc, cast_value<Acc>(v[i].v[w]));
    }
  }
  for (; c < whole; c += nt) {
    const Vec<V, W> v = chunks[c];
#pragma unroll
    for (int w = 0; w < W; ++w) acc = fn(acc, cast_value<Acc>(v.v[w]));
  }
  return c;
}

// Folds the part of row `row` that split `y` covers, threads [t0, t0 + nt).
// `Src` is the input pointer, or anything read like one (`in + k`, `p[j]`):
// a fused chain (backend/cuda/fused.cpp) computes each value where it is read.
// Thread t folds chunks t, t + nt, ... in order, each chunk's elements in
// order; from memory a whole chunk is one 16-byte load, four chunks in
// flight per thread. A computed source folds the same chunks in the same
// order, so a fused reduction equals the stored one bit for bit. (The host
// makes `split_len` a multiple of every chunk length.)
template <ReduceOp Op, typename Src, typename Acc>
__device__ __forceinline__ Acc row_partial(const Src& in, const cuda::RowReduceArgs& a, int64_t row, int64_t y, int t0,
                                           int nt) {
  using V = typename SourceValue<Src>::type;
  constexpr int W = kChunk<V>;
  const reduce::Fn<Op> fn;
  Acc acc = reduce::Fn<Op>::template identity<Acc>();
  int64_t kl[1];
  cuda::elem_to_locs<0>(row, a.kept, kl);
  const int64_t lo = y * a.split_len;
  const int64_t hi = lo + a.split_len < a.run ? lo + a.split_len : a.run;
  if (lo >= hi) return acc;
  const int64_t n_chunks = (hi - lo + W - 1) / W, whole = (hi - lo) / W;
  for (int64_t o = 0; o < a.n_outer; ++o) {
    int64_t ol[1];
    cuda::elem_to_locs<0>(o, a.outer, ol);
    const auto p = in + (kl[0] + ol[0] + lo);
    int64_t c = t0;
    if constexpr (SourceValue<Src>::in_memory && sizeof(V) * W == 16) {
      if (reinterpret_cast<uintptr_t>(p) % 16 == 0)
        c = fold_chunks<Op>(reinterpret_cast<const Vec<V, W>*>(p), c, whole, nt, acc);
    }
    // Elementwise: a computed or misaligned row, and the last partial chunk.
    for (; c < n_chunks; c += nt) {
      const int64_t j0 = c * W;
#pragma unroll
      for (int w = 0; w < W; ++w) {
        if (j0 + w < hi - lo) acc = fn(acc, cast_value<Acc>(p[j0 + w]));
      }
    }
  }
  return acc;
}

// One block per (row, split); blockIdx.x strides over rows.
template <ReduceOp Op, typename Src, typename Acc, typename Out>
__device__ __forceinline__ void row_block(const Src& in, Out* out, const cuda::RowReduceArgs& a) {
  const int64_t splits = gridDim.y;
  for (int64_t row = blockIdx.x; row < a.n_rows; row += gridDim.x) {
    Acc acc = row_partial<Op, Src, Acc>(in, a, row, blockIdx.y, threadIdx.x, blockDim.x);
    acc = block_reduce<Op>(acc);
    if (threadIdx.x == 0) out[row * splits + blockIdx.y] = cast_value<Out>(acc);
  }
}

// One warp per (row, split).
template <ReduceOp Op, typename Src, typename Acc, typename Out>
__device__ __forceinline__ void row_warp(const Src& in, Out* out, const cuda::RowReduceArgs& a) {
  const int64_t splits = gridDim.y;
  const int warps = blockDim.x / 32, lane = threadIdx.x % 32;
  for (int64_t row = int64_t(blockIdx.x) * warps + threadIdx.x / 32; row < a.n_rows;
       row += int64_t(gridDim.x) * warps) {
    Acc acc = row_partial<Op, Src, Acc>(in, a, row, blockIdx.y, lane, 32);
    acc = warp_reduce<Op>(acc);
    if (lane == 0) out[row * splits + blockIdx.y] = cast_value<Out>(acc);
  }
}


// Block (32, 8); out index (z * n_outer + p) * inner + k.
template <ReduceOp Op, typename In, typename Acc, typename Out>
__device__ __forceinline__ void col_reduce(const In* in, Out* out, const cuda::ColReduceArgs& a) {
  __shared__ alignas(16) unsigned char raw[8 * 33 * sizeof(Acc)];
  Acc* tile = reinterpret_cast<Acc*>(raw);
  const reduce::Fn<Op> fn;
  const int64_t k = int64_t(blockIdx.x) * 32 + threadIdx.x;
  const int64_t lo = int64_t(blockIdx.z) * a.split_len;
  const int64_t hi = lo + a.split_len < a.n_red ? lo + a.split_len : a.n_red;
  for (int64_t p = blockIdx.y; p < a.n_outer; p += gridDim.y) {
    Acc acc = reduce::Fn<Op>::template identity<Acc>();
    if (k < a.inner) {
      int64_t kl[1];
      cuda::elem_to_locs<0>(p, a.kept, kl);
      const In* base = in + kl[0] + k;
      // Unrolled so that several rows' loads are in flight at once.
#pragma unroll 8
      for (int64_t r = lo + threadIdx.y; r < hi; r += blockDim.y) {
        int64_t rl[1];
        cuda::elem_to_locs<0>(r, a.red, rl);
        acc = fn(acc, cast_value<Acc>(base[rl[0]]));
      }
    }
    tile[threadIdx.y * 33 + threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0) {
      for (int j = 1; j < blockDim.y; ++j) acc = fn(acc, tile[j * 33 + threadIdx.x]);
      if (k < a.inner) out[(int64_t(blockIdx.z) * a.n_outer + p) * a.inner + k] = cast_value<Out>(acc);
    }
    __syncthreads();
  }
}

}  // namespace alloy

#define ALLOY_KERNEL_row_block(OP, In, Acc, Out)                                                  \
  extern "C" __global__ void __launch_bounds__(256) row_block(const In* in, Out* out, alloy::cuda::RowReduceArgs a) { \
    alloy::row_block<OP, const In*, Acc, Out>(in, out, a);                                        \
  }
#define ALLOY_KERNEL_row_warp(OP, In, Acc, Out)                                                   \
  extern "C" __global__ void __launch_bounds__(256) row_warp(const In* in, Out* out, alloy::cuda::RowReduceArgs a) { \
    alloy::row_warp<OP, const In*, Acc, Out>(in, out, a);                                         \
  }
#define ALLOY_KERNEL_col(OP, In, Acc, Out)                                                        \
  extern "C" __global__ void __launch_bounds__(256) col(const In* in, Out* out, alloy::cuda::ColReduceArgs a) { \
    alloy::col_reduce<OP, In, Acc, Out>(in, out, a);                                              \
  }
