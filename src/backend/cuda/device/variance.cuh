// Variance in one pass over the input. Each thread folds its values into
// moments (count, mean, sum of squared deviations): a 16-byte chunk at a time,
// the chunk's own mean and deviations first, then Chan et al.'s merge (one
// division per chunk); threads, warps and blocks merge their moments the same
// way. Rows ([rows, n], the reduced axis contiguous): one block, or one warp
// for short rows, per row. Columns ([n, cols]): 32 columns per block, 8
// thread rows splitting the reduced rows. A long reduced axis is split over
// gridDim.y; each split's moments go to `partial` and var_merge combines them.
#pragma once

#include "kernel_common.cuh"

namespace alloy {

template <typename A>
struct Moments {
  A n, mean, m2;
};

template <typename A>
__device__ __forceinline__ Moments<A> merge(const Moments<A>& a, const Moments<A>& b) {
  const A n = a.n + b.n;
  if (b.n == A(0)) return a;
  const A delta = b.mean - a.mean, wb = b.n / n;
  return {n, a.mean + delta * wb, a.m2 + b.m2 + delta * delta * a.n * wb};
}

// The moments of W values.
template <typename A, int W, typename T>
__device__ __forceinline__ Moments<A> chunk_moments(const T (&v)[W]) {
  A s = A(0);
#pragma unroll
  for (int i = 0; i < W; ++i) s += cast_value<A>(v[i]);
  const A mean = s * (A(1) / A(W));
  A q = A(0);
#pragma unroll
  for (int i = 0; i < W; ++i) {
    const A d = cast_value<A>(v[i]) - mean;
    q += d * d;
  }
  return {A(W), mean, q};
}

template <typename A>
__device__ __forceinline__ Moments<A> warp_merge(Moments<A> m) {
#pragma unroll
  for (int d = 16; d > 0; d /= 2) {
    const Moments<A> o{shfl_down(m.n, d), shfl_down(m.mean, d), shfl_down(m.m2, d)};
    m = merge(m, o);
  }
  return m;
}

// Merged over the block; valid in thread 0.
template <typename A>
__device__ __forceinline__ Moments<A> block_merge(Moments<A> m) {
  __shared__ Moments<A> part[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
  m = warp_merge(m);
  if (lane == 0) part[warp] = m;
  __syncthreads();
  if (warp == 0) {
    m = lane < warps ? part[lane] : Moments<A>{A(0), A(0), A(0)};
    m = warp_merge(m);
  }
  __syncthreads();
  return m;
}

// Moments of row elements [lo, hi) for threads t0, t0 + nt, ...: whole
// 16-byte chunks from vector loads when the row is aligned, the rest one by one.
template <typename T, typename A>
__device__ __forceinline__ Moments<A> row_moments(const T* p, int64_t lo, int64_t hi, int t0, int nt) {
  constexpr int W = sizeof(T) >= 16 ? 1 : int(16 / sizeof(T));
  Moments<A> m{A(0), A(0), A(0)};
  int64_t first_loose = lo;
  if (reinterpret_cast<uintptr_t>(p + lo) % 16 == 0) {
    const Vec<T, W>* chunks = reinterpret_cast<const Vec<T, W>*>(p + lo);
    const int64_t whole = (hi - lo) / W;
    int64_t c = t0;
    for (; c + nt < whole; c += 2 * nt) {  // two loads in flight
      const Vec<T, W> v0 = chunks[c], v1 = chunks[c + nt];
      m = merge(m, chunk_moments<A>(v0.v));
      m = merge(m, chunk_moments<A>(v1.v));
    }
    if (c < whole) m = merge(m, chunk_moments<A>(chunks[c].v));
    first_loose = lo + whole * W;
  }
  for (int64_t i = first_loose + t0; i < hi; i += nt) m = merge(m, Moments<A>{A(1), cast_value<A>(p[i]), A(0)});
  return m;
}

template <typename A>
__device__ __forceinline__ void store_partial(const Moments<A>& m, A* partial, int64_t at) {
  partial[3 * at] = m.n;
  partial[3 * at + 1] = m.mean;
  partial[3 * at + 2] = m.m2;
}

// Rows of `in` ([rows, n]); split y covers [y * split_len, ...). With one
// split the variance goes to `out`, else the moments to partial[row][y].
template <typename T, typename A>
__device__ __forceinline__ void var_rows_block(const T* in, T* out, A* partial, int64_t rows, int64_t n,
                                               int64_t split_len, A divisor) {
  const int64_t lo = int64_t(blockIdx.y) * split_len, hi = lo + split_len < n ? lo + split_len : n;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    Moments<A> m = row_moments<T, A>(in + r * n, lo, hi, threadIdx.x, blockDim.x);
    m = block_merge(m);
    if (threadIdx.x == 0) {
      if (gridDim.y == 1) out[r] = cast_value<T>(m.m2 / divisor);
      else store_partial(m, partial, r * gridDim.y + blockIdx.y);
    }
  }
}

template <typename T, typename A>
__device__ __forceinline__ void var_rows_warp(const T* in, T* out, int64_t rows, int64_t n, A divisor) {
  const int warps = blockDim.x / 32, lane = threadIdx.x % 32;
  for (int64_t r = int64_t(blockIdx.x) * warps + threadIdx.x / 32; r < rows; r += int64_t(gridDim.x) * warps) {
    Moments<A> m = warp_merge(row_moments<T, A>(in + r * n, 0, n, lane, 32));
    if (lane == 0) out[r] = cast_value<T>(m.m2 / divisor);
  }
}

// Block (32, 8): columns blockIdx.x * 32 + threadIdx.x of `in` ([n, cols]),
// rows of split blockIdx.y. With one split the variance goes to `out`, else
// the moments to partial[y][col].
template <typename T, typename A>
__device__ __forceinline__ void var_cols(const T* in, T* out, A* partial, int64_t n, int64_t cols, int64_t split_len,
                                         A divisor) {
  __shared__ Moments<A> tile[8][33];
  const int64_t k = int64_t(blockIdx.x) * 32 + threadIdx.x;
  const int64_t lo = int64_t(blockIdx.y) * split_len, hi = lo + split_len < n ? lo + split_len : n;
  Moments<A> m{A(0), A(0), A(0)};
  if (k < cols) {
    const T* col = in + k;
    int64_t r = lo + threadIdx.y;
    // Eight rows at a time (a chunk of this column's values): enough loads in
    // flight to keep the memory busy.
    for (; r + 7 * 8 < hi; r += 8 * 8) {
      T v[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) v[i] = col[(r + 8 * i) * cols];
      m = merge(m, chunk_moments<A>(v));
    }
    for (; r < hi; r += 8) m = merge(m, Moments<A>{A(1), cast_value<A>(col[r * cols]), A(0)});
  }
  tile[threadIdx.y][threadIdx.x] = m;
  __syncthreads();
  if (threadIdx.y == 0 && k < cols) {
    for (int j = 1; j < 8; ++j) m = merge(m, tile[j][threadIdx.x]);
    if (gridDim.y == 1) out[k] = cast_value<T>(m.m2 / divisor);
    else store_partial(m, partial, int64_t(blockIdx.y) * cols + k);
  }
}

// One warp per output: merges its `splits` moments (partial[o][s] for rows,
// partial[s][o] for columns) and writes the variance.
template <typename T, typename A>
__device__ __forceinline__ void var_merge(const A* partial, T* out, int64_t outputs, int64_t splits, bool columns,
                                          A divisor) {
  const int warps = blockDim.x / 32, lane = threadIdx.x % 32;
  for (int64_t o = int64_t(blockIdx.x) * warps + threadIdx.x / 32; o < outputs; o += int64_t(gridDim.x) * warps) {
    Moments<A> m{A(0), A(0), A(0)};
    for (int64_t s = lane; s < splits; s += 32) {
      const int64_t at = columns ? s * outputs + o : o * splits + s;
      m = merge(m, Moments<A>{partial[3 * at], partial[3 * at + 1], partial[3 * at + 2]});
    }
    m = warp_merge(m);
    if (lane == 0) out[o] = cast_value<T>(m.m2 / divisor);
  }
}

}  // namespace alloy

#define ALLOY_KERNEL_var_rows_block(T, A)                                                                      \
  extern "C" __global__ void __launch_bounds__(256)                                                           \
      var_rows_block(const T* in, T* out, A* partial, int64_t rows, int64_t n, int64_t split_len, A divisor) { \
    alloy::var_rows_block<T, A>(in, out, partial, rows, n, split_len, divisor);                             \
  }
#define ALLOY_KERNEL_var_rows_warp(T, A)                                                                    \
  extern "C" __global__ void __launch_bounds__(256)                                                         \
      var_rows_warp(const T* in, T* out, A* partial, int64_t rows, int64_t n, int64_t split_len, A divisor) { \
    alloy::var_rows_warp<T, A>(in, out, rows, n, divisor);                                                  \
  }
#define ALLOY_KERNEL_var_cols(T, A)                                                                             \
  extern "C" __global__ void __launch_bounds__(256)                                                            \
      var_cols(const T* in, T* out, A* partial, int64_t n, int64_t cols, int64_t split_len, A divisor) {        \
    alloy::var_cols<T, A>(in, out, partial, n, cols, split_len, divisor);                                      \
  }
#define ALLOY_KERNEL_var_merge(T, A)                                                                              \
  extern "C" __global__ void __launch_bounds__(256)                                                              \
      var_merge(const A* partial, T* out, int64_t outputs, int64_t splits, int32_t columns, A divisor) {          \
    alloy::var_merge<T, A>(partial, out, outputs, splits, columns != 0, divisor);                                \
  }
