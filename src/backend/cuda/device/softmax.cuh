// Softmax and logsumexp over the last axis of a row-contiguous input.
//   softmax_rows<G, K>: a group of G threads per row (a warp, G = 32, eight
//     rows per block; or a block of G = 256 or 1024), K elements per thread
//     held in registers: each element is read once and written once;
//   softmax_staged<G, K>: (softmax) the same for long aligned rows, one
//     block looping over rows, the next row staged in shared memory while
//     this one is reduced and written;
//   softmax_loop: one block per row of any length, reading the row for its
//     max, for its sum of exponentials and (softmax) to write;
//   softmax_split_*: (softmax) few long rows, each split over gridDim.y
//     blocks: the splits' maxima, then their sums of exponentials, then the
//     write;
//   lse_stream: logsumexp of longer rows read once, a running max and sum
//     per thread (split over blocks when rows are few, lse_merge combining).
// All compute in Acc (float, or double for float64) and round once at the
// end. The max is the Reduce kernels' (NaN wins) and the shift the composite
// ops' (src/ops/reduction.cpp), so the results agree with the unfused graph
// up to rounding: a row holding +inf or NaN gives NaN (softmax); logsumexp
// shifts by 0 where the max is infinite.
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

// Folds one value per thread of the block with `fn`, every thread getting the result.
template <typename F, typename Acc>
__device__ __forceinline__ Acc fold_partials(const Acc* part, int64_t count, Acc init, F fn) {
  Acc v = init;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) v = fn(v, part[i]);
  return block_all(v, fn);
}

// One row held in registers by a group of G threads (a warp or the block):
// element j = lane + G * k lives in v[k]. G is a constant, so each element's
// address is the lane's plus an immediate offset.
template <RowSoftmaxOp Op, int G, int K, typename T, typename Acc>
__device__ __forceinline__ void row_in_registers(const T* in, T* out, int64_t row, int64_t n, int lane) {
  constexpr bool kWarp = G == 32;
  const T* x = in + row * n + lane;
  const int64_t left = n - lane;  // elements k with G * k < left are this thread's
  Acc v[K];
#pragma unroll
  for (int k = 0; k < K; ++k) {
    v[k] = G * k < left ? cast_value<Acc>(x[G * k]) : reduce::Fn<ReduceOp::Max>::template identity<Acc>();
  }
  Acc m = reduce::Fn<ReduceOp::Max>::template identity<Acc>();
#pragma unroll
  for (int k = 0; k < K; ++k) m = MaxOf()(m, v[k]);
  m = group_all<kWarp>(m, MaxOf());
  const Acc shift = Op == RowSoftmaxOp::Softmax ? m : lse_shift(m);
  Acc s = 0;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    v[k] = exp_acc(v[k] - shift);
    if (G * k < left) s += v[k];
  }
  s = group_all<kWarp>(s, SumOf());
  if constexpr (Op == RowSoftmaxOp::Softmax) {
    T* y = out + row * n + lane;
    const Acc r = Acc(1) / s;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      if (G * k < left) y[G * k] = cast_value<T>(v[k] * r);
    }
  } else if (lane == 0) {
    out[row] = cast_value<T>(log_acc(s) + shift);
  }
}

}  // namespace softmax_detail

// G == 32: blocks of 256 threads, one row per warp; else blocks of G
// threads, one row per block.
template <RowSoftmaxOp Op, typename T, typename Acc, int G, int K>
__device__ __forceinline__ void softmax_rows(const T* in, T* out, int64_t n_rows, int64_t n) {
  constexpr int kRowsPerBlock = G == 32 ? 8 : 1;
  for (int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / G; row < n_rows;
       row += int64_t(gridDim.x) * kRowsPerBlock)
    softmax_detail::row_in_registers<Op, G, K, T, Acc>(in, out, row, n, threadIdx.x % G);
}

namespace softmax_detail {

// 16 bytes from global memory into this thread's shared-memory slot without
// passing through registers (cp.async, sm_80 and later; a plain copy before).
__device__ __forceinline__ void stage16(void* smem, const void* gmem) {
#if __CUDA_ARCH__ >= 800
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(gmem) : "memory");
#else
  *static_cast<bits128*>(smem) = *static_cast<const bits128*>(gmem);
#endif
}
__device__ __forceinline__ void stage_commit() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
__device__ __forceinline__ void stage_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group 0;" ::: "memory");
#endif
}

}  // namespace softmax_detail

// Softmax of long aligned rows (16-byte rows starts, a whole number of
// 16-byte chunks a row), one row per block of G threads at a time, the
// block looping over rows. A row held in registers leaves room for one or
// two blocks per SM, and a block that reduces does not read: so while a
// row is reduced and written from registers, the block's next row is
// already on its way into shared memory (each thread stages exactly the
// chunks it will hold: no barrier guards the slots). Thread t holds chunks
// t + G * i (16 bytes each); dynamic shared memory holds one row.
template <RowSoftmaxOp Op, typename T, typename Acc, int G, int K>
__device__ __forceinline__ void softmax_rows_staged(const T* in, T* out, int64_t n_rows, int64_t n) {
  using namespace softmax_detail;
  static_assert(Op == RowSoftmaxOp::Softmax, "logsumexp streams its long rows (lse_stream)");
  constexpr int W = 16 / sizeof(T), C = K / W > 0 ? K / W : 1;
  using Chunk = Vec<T, W>;
  extern __shared__ __align__(16) unsigned char staged_row[];
  Chunk* slots = reinterpret_cast<Chunk*>(staged_row);
  const int64_t chunks = n / W;
  const int t = threadIdx.x;
  auto stage = [&](int64_t row) {
    const Chunk* src = reinterpret_cast<const Chunk*>(in + row * n);
#pragma unroll
    for (int i = 0; i < C; ++i) {
      const int64_t c = t + int64_t(G) * i;
      if (c < chunks) stage16(&slots[c], &src[c]);
    }
    stage_commit();
  };
  int64_t row = blockIdx.x;
  if (row < n_rows) stage(row);
  for (; row < n_rows; row += gridDim.x) {
    stage_wait();
    Acc v[C * W];
#pragma unroll
    for (int i = 0; i < C; ++i) {
      const int64_t c = t + int64_t(G) * i;
      const Chunk q = c < chunks ? slots[c] : Chunk{};
#pragma unroll
      for (int w = 0; w < W; ++w)
        v[i * W + w] = c < chunks ? cast_value<Acc>(q.v[w]) : reduce::Fn<ReduceOp::Max>::template identity<Acc>();
    }
    if (row + gridDim.x < n_rows) stage(row + gridDim.x);  // my slots are read: refill them
    Acc m = reduce::Fn<ReduceOp::Max>::template identity<Acc>();
#pragma unroll
    for (int k = 0; k < C * W; ++k) m = MaxOf()(m, v[k]);
    m = block_all(m, MaxOf());
    Acc s = 0;
#pragma unroll
    for (int i = 0; i < C; ++i) {
      const bool mine = t + int64_t(G) * i < chunks;
#pragma unroll
      for (int w = 0; w < W; ++w) {
        v[i * W + w] = exp_acc(v[i * W + w] - m);
        if (mine) s += v[i * W + w];
      }
    }
    s = block_all(s, SumOf());
    const Acc r = Acc(1) / s;
    Chunk* dst = reinterpret_cast<Chunk*>(out + row * n);
#pragma unroll
    for (int i = 0; i < C; ++i) {
      const int64_t c = t + int64_t(G) * i;
      if (c < chunks) {
        Chunk q;
#pragma unroll
        for (int w = 0; w < W; ++w) q.v[w] = cast_value<T>(v[i * W + w] * r);
        dst[c] = q;
      }
    }
  }
}

// Blocks of 1024 threads, one row per block, rows of any length.
template <RowSoftmaxOp Op, typename T, typename Acc>
__device__ __forceinline__ void softmax_row_loop(const T* in, T* out, int64_t n_rows, int64_t n) {
  using namespace softmax_detail;
  static_assert(Op == RowSoftmaxOp::Softmax, "logsumexp streams its long rows (lse_stream)");
  for (int64_t row = blockIdx.x; row < n_rows; row += gridDim.x) {
    const T* x = in + row * n;
    Acc m = reduce::Fn<ReduceOp::Max>::template identity<Acc>();
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) m = MaxOf()(m, cast_value<Acc>(x[j]));
    m = block_all(m, MaxOf());
    Acc s = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) s += exp_acc(cast_value<Acc>(x[j]) - m);
    s = block_all(s, SumOf());
    T* y = out + row * n;
    const Acc r = Acc(1) / s;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) y[j] = cast_value<T>(exp_acc(cast_value<Acc>(x[j]) - m) * r);
  }
}

// Few long rows: row `blockIdx.x` (striding), split `blockIdx.y` of
// `split_len` elements; partials are [row][split].
template <typename T, typename Acc>
__device__ __forceinline__ void softmax_split_max(const T* in, Acc* part_max, int64_t n_rows, int64_t n,
                                                  int64_t split_len) {
  using namespace softmax_detail;
  const int64_t lo = int64_t(blockIdx.y) * split_len, hi = lo + split_len < n ? lo + split_len : n;
  for (int64_t row = blockIdx.x; row < n_rows; row += gridDim.x) {
    const T* x = in + row * n;
    Acc m = reduce::Fn<ReduceOp::Max>::template identity<Acc>();
#pragma unroll 4
    for (int64_t j = lo + threadIdx.x; j < hi; j += blockDim.x) m = MaxOf()(m, cast_value<Acc>(x[j]));
    m = block_all(m, MaxOf());
    if (threadIdx.x == 0) part_max[row * gridDim.y + blockIdx.y] = m;
  }
}

template <RowSoftmaxOp Op, typename Acc>
__device__ __forceinline__ Acc split_shift(const Acc* part_max, int64_t row, int64_t splits) {
  using namespace softmax_detail;
  const Acc m = fold_partials(part_max + row * splits, splits, reduce::Fn<ReduceOp::Max>::template identity<Acc>(),
                              MaxOf());
  static_assert(Op == RowSoftmaxOp::Softmax, "logsumexp streams its long rows (lse_stream)");
  return m;
}

template <RowSoftmaxOp Op, typename T, typename Acc>
__device__ __forceinline__ void softmax_split_sum(const T* in, const Acc* part_max, Acc* part_sum, int64_t n_rows,
                                                  int64_t n, int64_t split_len) {
  using namespace softmax_detail;
  const int64_t lo = int64_t(blockIdx.y) * split_len, hi = lo + split_len < n ? lo + split_len : n;
  for (int64_t row = blockIdx.x; row < n_rows; row += gridDim.x) {
    const T* x = in + row * n;
    const Acc shift = split_shift<Op>(part_max, row, gridDim.y);
    Acc s = 0;
#pragma unroll 4
    for (int64_t j = lo + threadIdx.x; j < hi; j += blockDim.x) s += exp_acc(cast_value<Acc>(x[j]) - shift);
    s = block_all(s, SumOf());
    if (threadIdx.x == 0) part_sum[row * gridDim.y + blockIdx.y] = s;
  }
}

// Softmax: each split writes its elements.
template <RowSoftmaxOp Op, typename T, typename Acc>
__device__ __forceinline__ void softmax_split_finish(const T* in, const Acc* part_max, const Acc* part_sum, T* out,
                                                     int64_t n_rows, int64_t n, int64_t split_len, int64_t splits) {
  using namespace softmax_detail;
  static_assert(Op == RowSoftmaxOp::Softmax, "logsumexp streams its long rows (lse_stream)");
  const int64_t lo = int64_t(blockIdx.y) * split_len, hi = lo + split_len < n ? lo + split_len : n;
  for (int64_t row = blockIdx.x; row < n_rows; row += gridDim.x) {
    const Acc shift = split_shift<Op>(part_max, row, splits);
    const Acc r = Acc(1) / fold_partials(part_sum + row * splits, splits, Acc(0), SumOf());
    const T* x = in + row * n;
    T* y = out + row * n;
#pragma unroll 4
    for (int64_t j = lo + threadIdx.x; j < hi; j += blockDim.x)
      y[j] = cast_value<T>(exp_acc(cast_value<Acc>(x[j]) - shift) * r);
  }
}

// ---- logsumexp streamed: each thread keeps a running max and the sum of
// exp(x - max), rescaled when the max grows, so a row is read once with no
// registers held per element (many rows in flight per SM).
namespace softmax_detail {

// Adds B values to a running (m, s): one new max per batch, so the B
// exponentials are independent of each other. -inf adds nothing; NaN makes
// m NaN; once m is +inf or NaN, s no longer matters (lse_finish returns m).
template <int B, typename Acc>
__device__ __forceinline__ void online_add(Acc& m, Acc& s, const Acc (&x)[B]) {
  Acc mb = m;
#pragma unroll
  for (int b = 0; b < B; ++b) mb = MaxOf()(mb, x[b]);
  if (math::isnan(mb) || math::isinf(mb)) {  // NaN, +inf, or nothing but -inf yet
    m = mb;
    return;
  }
  s = math::isinf(m) ? Acc(0) : s * exp_acc(m - mb);
#pragma unroll
  for (int b = 0; b < B; ++b) s += exp_acc(x[b] - mb);
  m = mb;
}

template <typename Acc>
__device__ __forceinline__ void online_merge(Acc& m, Acc& s, Acc m2, Acc s2) {
  if (math::isnan(m)) return;
  if (math::isnan(m2)) {
    m = m2;
    return;
  }
  if (math::isinf(m2) && m2 < Acc(0)) return;
  if (math::isinf(m) && m < Acc(0)) {
    m = m2;
    s = s2;
  } else if (m2 > m) {
    s = s * exp_acc(m - m2) + s2;
    m = m2;
  } else {
    s += s2 * exp_acc(m2 - m);
  }
}

// The composite's value: NaN or an infinite max is the result itself.
template <typename Acc>
__device__ __forceinline__ Acc lse_finish(Acc m, Acc s) {
  return math::isnan(m) || math::isinf(m) ? m : log_acc(s) + m;
}

// Thread 0 of the block gets the merge of every thread's (m, s), in thread order.
template <typename Acc>
__device__ __forceinline__ void block_merge(Acc& m, Acc& s) {
  __shared__ Acc pm[32], ps[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const Acc m2 = __shfl_down_sync(0xffffffffu, m, d), s2 = __shfl_down_sync(0xffffffffu, s, d);
    if (lane + d < 32) online_merge(m, s, m2, s2);
  }
  if (lane == 0) {
    pm[warp] = m;
    ps[warp] = s;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < warps; ++w) online_merge(m, s, pm[w], ps[w]);
  }
  __syncthreads();
}

}  // namespace softmax_detail

// One block per (row, split `blockIdx.y` of `split_len`): the row's
// logsumexp when gridDim.y == 1, else the split's (m, s) into the partials
// [row][split] that lse_merge combines.
template <typename T, typename Acc>
__device__ __forceinline__ void lse_stream(const T* in, T* out, Acc* part_m, Acc* part_s, int64_t n_rows, int64_t n,
                                           int64_t split_len) {
  using namespace softmax_detail;
  const int64_t lo = int64_t(blockIdx.y) * split_len, hi = lo + split_len < n ? lo + split_len : n;
  for (int64_t row = blockIdx.x; row < n_rows; row += gridDim.x) {
    const T* x = in + row * n;
    Acc m = math::lowest<Acc>(), s = 0;  // -inf: nothing yet
    int64_t from = lo;
    // An aligned row: two 16-byte chunks per thread and step (chunks c and
    // c + blockDim.x), then the elements after the whole chunks one by one.
    constexpr int W = 16 / sizeof(T);
    if constexpr (W > 1 && sizeof(T) * W == 16) {
      if (reinterpret_cast<uintptr_t>(x + lo) % 16 == 0) {
        const Vec<T, W>* chunks = reinterpret_cast<const Vec<T, W>*>(x + lo);
        const int64_t whole = (hi - lo) / W, nt = blockDim.x;
        for (int64_t c = threadIdx.x; c < whole; c += 2 * nt) {
          const Vec<T, W> q0 = chunks[c];
          Acc xs[2 * W];
#pragma unroll
          for (int w = 0; w < W; ++w) xs[w] = cast_value<Acc>(q0.v[w]);
          if (c + nt < whole) {
            const Vec<T, W> q1 = chunks[c + nt];
#pragma unroll
            for (int w = 0; w < W; ++w) xs[W + w] = cast_value<Acc>(q1.v[w]);
          } else {
#pragma unroll
            for (int w = 0; w < W; ++w) xs[W + w] = math::lowest<Acc>();
          }
          online_add(m, s, xs);
        }
        from = lo + whole * W;
      }
    }
    constexpr int B = 8;
    for (int64_t j = from + threadIdx.x; j < hi; j += B * int64_t(blockDim.x)) {
      Acc xs[B];
#pragma unroll
      for (int b = 0; b < B; ++b) {
        const int64_t i = j + b * int64_t(blockDim.x);
        xs[b] = i < hi ? cast_value<Acc>(x[i]) : math::lowest<Acc>();
      }
      online_add(m, s, xs);
    }
    block_merge(m, s);
    if (threadIdx.x == 0) {
      if (gridDim.y == 1) {
        out[row] = cast_value<T>(lse_finish(m, s));
      } else {
        part_m[row * gridDim.y + blockIdx.y] = m;
        part_s[row * gridDim.y + blockIdx.y] = s;
      }
    }
  }
}

// One warp per row: lane l merges splits l, l + 32, ... in order, then the
// lanes' results merge (a row split over hundreds of blocks would otherwise
// wait on one load after another).
template <typename T, typename Acc>
__device__ __forceinline__ void lse_merge(const Acc* part_m, const Acc* part_s, T* out, int64_t n_rows, int64_t splits) {
  using namespace softmax_detail;
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / 32);
  for (int64_t row = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; row < n_rows; row += warps) {
    Acc m = math::lowest<Acc>(), s = 0;  // -inf: nothing yet
    for (int64_t k = lane; k < splits; k += 32) online_merge(m, s, part_m[row * splits + k], part_s[row * splits + k]);
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
      const Acc m2 = __shfl_down_sync(0xffffffffu, m, d), s2 = __shfl_down_sync(0xffffffffu, s, d);
      if (lane + d < 32) online_merge(m, s, m2, s2);
    }
    if (lane == 0) out[row] = cast_value<T>(lse_finish(m, s));
  }
}

}  // namespace alloy

#define ALLOY_KERNEL_softmax_rows(OP, T, Acc, G, K)                                                       \
  extern "C" __global__ void __launch_bounds__(G == 32 ? 256 : G)                                         \
      softmax_rows(const T* in, T* out, int64_t rows, int64_t n) {                                        \
    alloy::softmax_rows<OP, T, Acc, G, K>(in, out, rows, n);                                              \
  }
#define ALLOY_KERNEL_softmax_staged(OP, T, Acc, G, K)                                     \
  extern "C" __global__ void __launch_bounds__(G) softmax_staged(const T* in, T* out, int64_t rows, int64_t n) { \
    alloy::softmax_rows_staged<OP, T, Acc, G, K>(in, out, rows, n);                         \
  }
#define ALLOY_KERNEL_softmax_loop(OP, T, Acc)                                                                   \
  extern "C" __global__ void __launch_bounds__(1024) softmax_loop(const T* in, T* out, int64_t rows, int64_t n) { \
    alloy::softmax_row_loop<OP, T, Acc>(in, out, rows, n);                                                       \
  }
#define ALLOY_KERNEL_split_max(OP, T, Acc)                                                                     \
  extern "C" __global__ void __launch_bounds__(256)                                                           \
      split_max(const T* in, Acc* part_max, int64_t rows, int64_t n, int64_t split_len) {                     \
    alloy::softmax_split_max<T, Acc>(in, part_max, rows, n, split_len);                                       \
  }
#define ALLOY_KERNEL_split_sum(OP, T, Acc)                                                                     \
  extern "C" __global__ void __launch_bounds__(256) split_sum(const T* in, const Acc* part_max, Acc* part_sum, \
                                                              int64_t rows, int64_t n, int64_t split_len) {   \
    alloy::softmax_split_sum<OP, T, Acc>(in, part_max, part_sum, rows, n, split_len);                         \
  }
#define ALLOY_KERNEL_split_finish(OP, T, Acc)                                                                 \
  extern "C" __global__ void __launch_bounds__(256)                                                          \
      split_finish(const T* in, const Acc* part_max, const Acc* part_sum, T* out, int64_t rows, int64_t n,   \
                   int64_t split_len, int64_t splits) {                                                      \
    alloy::softmax_split_finish<OP, T, Acc>(in, part_max, part_sum, out, rows, n, split_len, splits);        \
  }
#define ALLOY_KERNEL_lse_stream(OP, T, Acc)                                                                  \
  extern "C" __global__ void __launch_bounds__(256) lse_stream(const T* in, T* out, Acc* part_m, Acc* part_s, \
                                                               int64_t rows, int64_t n, int64_t split_len) { \
    alloy::lse_stream<T, Acc>(in, out, part_m, part_s, rows, n, split_len);                                  \
  }
#define ALLOY_KERNEL_lse_merge(OP, T, Acc)                                                                     \
  extern "C" __global__ void lse_merge(const Acc* part_m, const Acc* part_s, T* out, int64_t rows, int64_t splits) { \
    alloy::lse_merge<T, Acc>(part_m, part_s, out, rows, splits);                                               \
  }
