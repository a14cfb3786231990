// Sort and ArgSort of the rows of a row-contiguous [rows, n] input, in the
// order of backend/common/sort_ops.h with ties broken by position: that
// makes (key, position) a strict total order, so any correct sorting network
// or merge gives the one stable result the CPU gives.
//   sort_tile: one block per tile of kTile elements of a row: a bitonic sort
//     in shared memory (the tile padded to a power of two with pads that go
//     last). A row of n <= kTile is one tile and is written out directly
//     (short rows several to a block); longer rows write (key, position)
//     pairs for the merge passes.
//   sort_merge: one pass merging neighbouring sorted runs of `width` into
//     runs of 2 * width, one thread per element: an element's place in the
//     merged run is its place in its own run plus the number of elements of
//     the other run that go before it (a binary search). log2(n / kTile)
//     passes sort any row length < 2^32.
// Either output pointer may be null: Sort writes keys, ArgSort positions.
#pragma once

#include "backend/common/sort_ops.h"
// tests/cpp/test_sort_kernel_host.cpp runs these kernels on the host with one
// thread per block (every loop then runs the same network sequentially) and
// provides the few device names they use itself.
#ifndef ALLOY_SORT_HOST_EMULATION
#include "kernel_common.cuh"
#endif

namespace alloy::sort_kernels {

inline constexpr int kTile = 2048;
inline constexpr int kThreads = 512;
// Position of a pad in the tile sort: rows are shorter than 2^32 - 1, so no
// element has it.
inline constexpr uint32_t kPad = 0xffffffffu;

template <typename T>
__device__ __forceinline__ bool before(T a, uint32_t ia, T b, uint32_t ib) {
  if (sorting::less(a, b)) return true;
  if (sorting::less(b, a)) return false;
  return ia < ib;
}

// As `before`, with pads after everything (a pad's key is never read).
template <typename T>
__device__ __forceinline__ bool tile_before(T a, uint32_t ia, T b, uint32_t ib) {
  if (ia == kPad) return false;
  if (ib == kPad) return true;
  return before(a, ia, b, ib);
}

// The padded length of a tile of `len` elements: the next power of two.
__device__ __forceinline__ int padded(int len) {
  int size = 1;
  while (size < len) size <<= 1;
  return size;
}

template <typename T>
__device__ __forceinline__ void sort_tile(const T* in, T* out_keys, uint32_t* out_pos, int64_t n_rows, int64_t n) {
  alignas(16) __shared__ unsigned char raw[kTile * sizeof(T)];
  __shared__ uint32_t pos[kTile];
  T* keys = reinterpret_cast<T*>(raw);
  const int64_t tiles = (n + kTile - 1) / kTile;
  // Rows of one tile are packed kTile / padded(n) to a block, each in its own
  // segment of the shared arrays: the network below never pairs elements of
  // different segments (partners differ in bits below the segment size).
  const int per_block = tiles == 1 ? kTile / padded(static_cast<int>(n)) : 1;
  const int64_t jobs = tiles == 1 ? (n_rows + per_block - 1) / per_block : n_rows * tiles;
  for (int64_t job = blockIdx.x; job < jobs; job += gridDim.x) {
    const int64_t row0 = tiles == 1 ? job * per_block : job / tiles;
    const int64_t start = tiles == 1 ? 0 : (job - row0 * tiles) * kTile;
    const int len = static_cast<int>(n - start < kTile ? n - start : kTile);
    const int size = padded(len);
    const int rows_here = static_cast<int>(n_rows - row0 < per_block ? n_rows - row0 : per_block);
    const int total = rows_here * size;
    for (int i = threadIdx.x; i < total; i += blockDim.x) {
      const int r = i / size, e = i - r * size;
      if (e < len) keys[i] = in[(row0 + r) * n + start + e];
      pos[i] = e < len ? static_cast<uint32_t>(start + e) : kPad;
    }
    __syncthreads();
    // Bitonic network per segment: blocks of k alternate direction until the
    // last (k == size) is ascending. Each pair (i, i ^ j) is handled by the
    // thread of i.
    for (int k = 2; k <= size; k <<= 1) {
      for (int j = k >> 1; j > 0; j >>= 1) {
        for (int i = threadIdx.x; i < total; i += blockDim.x) {
          const int l = i ^ j;
          if (l <= i) continue;
          // k == size: the final merge of every segment, all ascending (bit
          // k of i is then the segment's parity, not a direction).
          const bool ascending = k == size || (i & k) == 0;
          const bool swap = ascending ? tile_before(keys[l], pos[l], keys[i], pos[i])
                                      : tile_before(keys[i], pos[i], keys[l], pos[l]);
          if (swap) {
            const T tk = keys[i];
            keys[i] = keys[l];
            keys[l] = tk;
            const uint32_t tp = pos[i];
            pos[i] = pos[l];
            pos[l] = tp;
          }
        }
        __syncthreads();
      }
    }
    for (int i = threadIdx.x; i < total; i += blockDim.x) {
      const int r = i / size, e = i - r * size;
      if (e >= len) continue;
      const int64_t at = (row0 + r) * n + start + e;
      if (out_keys) out_keys[at] = keys[i];
      if (out_pos) out_pos[at] = pos[i];
    }
    __syncthreads();  // the next job reuses the shared tile
  }
}

// Elements of the sorted run [lo, hi) of a row that go before (key, id).
template <typename T>
__device__ __forceinline__ int64_t count_before(const T* keys, const uint32_t* pos, int64_t lo, int64_t hi, T key,
                                                uint32_t id) {
  const int64_t first = lo;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (before(keys[mid], pos[mid], key, id)) lo = mid + 1;
    else hi = mid;
  }
  return lo - first;
}

template <typename T>
__device__ __forceinline__ void sort_merge(const T* keys_in, const uint32_t* pos_in, T* keys_out, uint32_t* pos_out,
                                           int64_t n_rows, int64_t n, int64_t width) {
  for (int64_t e = global_thread(); e < n_rows * n; e += grid_threads()) {
    const int64_t row = e / n, p = e - row * n;
    const int64_t run = p / width;
    const int64_t a_start = (run - (run & 1)) * width;  // the pair's left run
    const int64_t b_start = a_start + width;
    const int64_t b_end = b_start + width < n ? b_start + width : n;
    const T* rk = keys_in + row * n;
    const uint32_t* rp = pos_in + row * n;
    const T key = rk[p];
    const uint32_t id = rp[p];
    int64_t dest = p;  // a last run with no partner stays in place
    if (b_start < n) {
      if ((run & 1) == 0) dest = p + count_before(rk, rp, b_start, b_end, key, id);
      else dest = a_start + (p - b_start) + count_before(rk, rp, a_start, b_start, key, id);
    }
    if (keys_out) keys_out[row * n + dest] = key;
    if (pos_out) pos_out[row * n + dest] = id;
  }
}

}  // namespace alloy::sort_kernels

#define ALLOY_KERNEL_sort_tile(T)                                                                       \
  extern "C" __global__ void __launch_bounds__(alloy::sort_kernels::kThreads)                           \
      sort_tile(const T* in, T* out_keys, uint32_t* out_pos, int64_t n_rows, int64_t n) {               \
    alloy::sort_kernels::sort_tile<T>(in, out_keys, out_pos, n_rows, n);                                \
  }
#define ALLOY_KERNEL_sort_merge(T)                                                                      \
  extern "C" __global__ void sort_merge(const T* keys_in, const uint32_t* pos_in, T* keys_out,          \
                                        uint32_t* pos_out, int64_t n_rows, int64_t n, int64_t width) {  \
    alloy::sort_kernels::sort_merge<T>(keys_in, pos_in, keys_out, pos_out, n_rows, n, width);           \
  }
