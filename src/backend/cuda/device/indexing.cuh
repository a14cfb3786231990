// Gather and scatter over blocks at indexed positions (primitives/indexing.h
// has the semantics). An index outside its axis is an error, never an access:
// the kernel records the first one in `err` (flag, value, index array) and
// skips the element; the host reads `err` after the launch and throws.
#pragma once

#include "kernel_common.cuh"

namespace alloy {

// Element offset (in the target) of the block that index position `i` selects.
template <typename I>
__device__ __forceinline__ int64_t block_base(const cuda::IndexArgs& a, int64_t i, long long* err, bool* bad) {
  int64_t base = 0;
  for (int k = 0; k < a.n_idx; ++k) {
    const int64_t loc = cuda::elem_to_loc<int64_t>(i, a.idx_ndim, a.idx_shape, a.idx_strides[k]);
    const int64_t v = int64_t(static_cast<const I*>(a.idx[k])[loc]);
    const int64_t w = v < 0 ? v + a.axis_size[k] : v;
    if (w < 0 || w > a.axis_limit[k]) {
      if (atomicCAS(reinterpret_cast<unsigned long long*>(err), 0ull, 1ull) == 0ull) {
        err[1] = v;
        err[2] = k;
      }
      *bad = true;
      return 0;
    }
    base += w * a.axis_stride[k];
  }
  return base;
}

// Block (bx, by): thread row ty handles index position i, its lanes the
// block's elements; `slice` maps a block element to its source offset.
template <typename T, typename I>
__device__ __forceinline__ void gather(const T* src, T* out, cuda::IndexArgs a, cuda::StridedLayout<1> slice,
                                       long long* err) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.y + threadIdx.y; i < a.n_index;
       i += int64_t(gridDim.x) * blockDim.y) {
    bool bad = false;
    const int64_t base = block_base<I>(a, i, err, &bad);
    if (bad) continue;
    T* o = out + i * a.block;
    for (int64_t j = threadIdx.x; j < a.block; j += blockDim.x) {
      int64_t l[1];
      cuda::elem_to_locs<0>(j, slice, l);
      o[j] = src[base + l[0]];
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
      T cur;
      __builtin_memcpy(&cur, &assumed, 8);
      T next = combine(cur, v);
      unsigned long long bits;
      __builtin_memcpy(&bits, &next, 8);
      old = atomicCAS(word, assumed, bits);
    } while (old != assumed);
  } else {
    const uintptr_t p = reinterpret_cast<uintptr_t>(addr);
    auto* word = reinterpret_cast<unsigned*>(p & ~uintptr_t(3));
    const unsigned shift = unsigned(p & 3) * 8;
    const unsigned mask = sizeof(T) == 4 ? 0xffffffffu : ((1u << (sizeof(T) * 8)) - 1u) << shift;
    unsigned old = *word, assumed;
    do {
      assumed = old;
      unsigned bits = (assumed & mask) >> shift;
      T cur;
      __builtin_memcpy(&cur, &bits, sizeof(T));
      T next = combine(cur, v);
      unsigned nb = 0;
      __builtin_memcpy(&nb, &next, sizeof(T));
      old = atomicCAS(word, assumed, (assumed & ~mask) | ((nb << shift) & mask));
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
                                        int64_t n, long long* err) {
  for (int64_t e = global_thread(); e < n; e += grid_threads()) {
    bool bad = false;
    const int64_t base = block_base<I>(a, e / a.block, err, &bad);
    if (bad) continue;
    int64_t l[2];
    cuda::elem_to_locs<0>(e, upd, l);
    scatter_one<Mode>(out + base + l[1], updates[l[0]]);
  }
}

}  // namespace alloy

#define ALLOY_KERNEL_gather(T, I)                                                                  \
  extern "C" __global__ void gather(const T* src, T* out, alloy::cuda::IndexArgs a,               \
                                    alloy::cuda::StridedLayout<1> slice, long long* err) {        \
    alloy::gather<T, I>(src, out, a, slice, err);                                                  \
  }
#define ALLOY_KERNEL_scatter(MODE, T, I)                                                           \
  extern "C" __global__ void scatter(const T* updates, T* out, alloy::cuda::IndexArgs a,          \
                                     alloy::cuda::StridedLayout<2> upd, int64_t n, long long* err) { \
    alloy::scatter<MODE, T, I>(updates, out, a, upd, n, err);                                      \
  }
