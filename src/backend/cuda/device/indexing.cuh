// Gather and scatter over blocks at indexed positions, with the semantics of
// primitives/indexing.h: negative indices wrap once; what is still outside
// the axis is clamped by gathers and dropped by scatters, so no index ever
// reads or writes out of bounds.
#pragma once

#include "kernel_common.cuh"

namespace alloy {

// Index array k's contribution to the block offset of position i (32-bit
// divisions while the index shape allows) in *part. Out of range: clamped
// when Clamp, else false (the update is dropped).
template <typename I, bool Clamp>
__device__ __forceinline__ bool index_part(const cuda::IndexArgs& a, int k, int64_t i, int64_t* part) {
  int64_t loc = 0;
  if (a.n_index < (int64_t(1) << 31)) {
    unsigned u = unsigned(i);
    for (int d = a.idx_ndim - 1; d > 0; --d) {
      const unsigned s = unsigned(a.idx_shape[d]), q = u / s;
      loc += int64_t(u - q * s) * a.idx_strides[k][d];
      u = q;
    }
    if (a.idx_ndim > 0) loc += int64_t(u) * a.idx_strides[k][0];
  } else {
    loc = cuda::elem_to_loc<int64_t>(i, a.idx_ndim, a.idx_shape, a.idx_strides[k]);
  }
  const int64_t v = int64_t(static_cast<const I*>(a.idx[k])[loc]);
  int64_t w = v < 0 ? v + a.axis_size[k] : v;
  if (w < 0 || w > a.axis_limit[k]) {
    if constexpr (!Clamp) return false;
    const int64_t hi = a.axis_limit[k] > 0 ? a.axis_limit[k] : 0;
    w = w < 0 ? 0 : hi;
  }
  *part = w * a.axis_stride[k];
  return true;
}

// Element offset (in the target) of the block that index position `i`
// selects (scatters); *bad when an index is out of range.
template <typename I>
__device__ __forceinline__ int64_t block_base(const cuda::IndexArgs& a, int64_t i, bool* bad) {
  int64_t base = 0;
  for (int k = 0; k < a.n_idx; ++k) {
    int64_t p = 0;
    if (!index_part<I, false>(a, k, i, &p)) {
      *bad = true;
      return 0;
    }
    base += p;
  }
  return base;
}

// Block (bx, by), bx a power of two in [16, 256]: thread row ty handles index
// position i, its lanes the block's elements. Lane k of each row reads index
// array k and the row sums the parts with shuffles (rows of 16 lanes share a
// warp, hence the shuffle width and the block-uniform loop).
template <typename T, typename I>
__device__ __forceinline__ void gather(const T* src, T* out, cuda::IndexArgs a, cuda::StridedLayout<1> slice) {
  const int bx = blockDim.x, x = threadIdx.x;
  const int width = bx < 32 ? bx : 32;
  const int lane = x % width;
  const bool unit = slice.ndim == 1;
  for (int64_t i0 = int64_t(blockIdx.x) * blockDim.y; i0 < a.n_index; i0 += int64_t(gridDim.x) * blockDim.y) {
    const int64_t i = i0 + threadIdx.y;
    const bool active = i < a.n_index;
    int64_t part = 0;
    if (active && lane < a.n_idx) index_part<I, true>(a, lane, i, &part);
#pragma unroll
    for (int d = 16; d > 0; d /= 2) {
      const int64_t o = __shfl_down_sync(0xffffffffu, part, d, width);
      if (d < width) part += o;
    }
    const int64_t base = __shfl_sync(0xffffffffu, part, 0, width);
    if (!active) continue;
    T* o = out + i * a.block;
    if (unit) {
      const int64_t st = slice.strides[0][0];
      for (int64_t j = x; j < a.block; j += bx) o[j] = src[base + j * st];
    } else {
      for (int64_t j = x; j < a.block; j += bx) {
        int64_t l[1];
        cuda::elem_to_locs<0>(j, slice, l);
        o[j] = src[base + l[0]];
      }
    }
  }
}

// Atomically out[0] = combine(out[0], v) for any element size, through a
// compare-and-swap on the aligned 32- or 64-bit word holding it.
template <typename T, typename F>
__device__ __forceinline__ void atomic_update(T* addr, T v, F combine) {
  if constexpr (sizeof(T) == 8) {
    auto* word = reinterpret_cast<unsigned long long*>(addr);
    unsigned long long old = *word, assumed;
    do {
      assumed = old;
      old = atomicCAS(word, assumed, to_bits(combine(from_bits<T>(assumed), v)));
    } while (old != assumed);
  } else {
    const uintptr_t p = reinterpret_cast<uintptr_t>(addr);
    auto* word = reinterpret_cast<unsigned*>(p & ~uintptr_t(3));
    const unsigned shift = unsigned(p & 3) * 8;
    const unsigned mask = sizeof(T) == 4 ? 0xffffffffu : ((1u << (sizeof(T) * 8)) - 1u) << shift;
    unsigned old = *word, assumed;
    do {
      assumed = old;
      const T next = combine(from_bits<T>((assumed & mask) >> shift), v);
      old = atomicCAS(word, assumed, (assumed & ~mask) | ((to_bits(next) << shift) & mask));
    } while (old != assumed);
  }
}

// Scatter modes: 0 none (store), 1 add, 2 prod, 3 max, 4 min.
template <int Mode, typename T>
__device__ __forceinline__ void scatter_one(T* dst, T v) {
  if constexpr (Mode == 0) {
    *dst = v;
  } else if constexpr (Mode == 1) {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int> ||
                  std::is_same_v<T, unsigned> || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
      atomicAdd(dst, v);
    } else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, uint64_t>) {
      atomicAdd(reinterpret_cast<unsigned long long*>(dst), (unsigned long long)v);
    } else if constexpr (math::is_complex_v<T>) {
      atomicAdd(&dst->re, v.re);
      atomicAdd(&dst->im, v.im);
    } else {
      atomic_update(dst, v, [](T x, T y) { return cast_value<T>(x + y); });
    }
  } else if constexpr (Mode == 2) {
    atomic_update(dst, v, [](T x, T y) { return cast_value<T>(x * y); });
  } else if constexpr (Mode == 3) {
    atomic_update(dst, v, [](T x, T y) { return y > x ? y : x; });
  } else {
    atomic_update(dst, v, [](T x, T y) { return y < x ? y : x; });
  }
}

// One thread per update element; upd.strides[0] are the updates' strides,
// upd.strides[1] the out offsets of the block dims (0 on index dims).
template <int Mode, typename T, typename I>
__device__ __forceinline__ void scatter(const T* updates, T* out, cuda::IndexArgs a, cuda::StridedLayout<2> upd,
                                        int64_t n) {
  for (int64_t e = global_thread(); e < n; e += grid_threads()) {
    bool bad = false;
    const int64_t base = block_base<I>(a, e / a.block, &bad);
    if (bad) continue;
    int64_t l[2];
    cuda::elem_to_locs<0>(e, upd, l);
    scatter_one<Mode>(out + base + l[1], updates[l[0]]);
  }
}

}  // namespace alloy

#define ALLOY_KERNEL_gather(T, I)                                                                  \
  extern "C" __global__ void gather(const T* src, T* out, alloy::cuda::IndexArgs a,               \
                                    alloy::cuda::StridedLayout<1> slice) {                        \
    alloy::gather<T, I>(src, out, a, slice);                                                       \
  }
#define ALLOY_KERNEL_scatter(MODE, T, I)                                                           \
  extern "C" __global__ void scatter(const T* updates, T* out, alloy::cuda::IndexArgs a,          \
                                     alloy::cuda::StridedLayout<2> upd, int64_t n) {              \
    alloy::scatter<MODE, T, I>(updates, out, a, upd, n);                                           \
  }
