// Loop skeletons shared by the CPU element kernels (unary, binary, ternary,
// reduce, scan): innermost-row iteration over collapsed layouts, outputs that
// mirror a contiguous input's layout, and row-contiguous staging copies.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include <algorithm>

#include "alloy/allocator.h"
#include "alloy/detail/thread_pool.h"
#include "backend/cpu/strided.h"

namespace alloy::cpu {

// Runs f(begin, end) over [0, n) split into one chunk per pool thread, when
// each chunk has at least `min_chunk` items (below that, threads cost more
// than they save and f runs once, inline).
template <typename F>
void parallel_chunks(size_t n, F&& f, size_t min_chunk = size_t(1) << 15) {
  auto& pool = detail::ThreadPool::global();
  size_t parts = std::min(pool.size(), n / std::max<size_t>(min_chunk, 1));
  if (parts <= 1) {
    f(size_t(0), n);
    return;
  }
  // Chunk edges on 64-element boundaries keep vector loops aligned alike.
  size_t per = ((n + parts - 1) / parts + 63) / 64 * 64;
  pool.parallel_for(parts, [&](size_t p) {
    size_t b = std::min(n, p * per), e = std::min(n, b + per);
    if (b < e) f(b, e);
  });
}

// Whether this CPU runs the AVX2 + F16C copies of the element loops below.
inline bool cpu_has_avx2_f16c() {
#if defined(__x86_64__)
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  return yes;
#else
  return false;
#endif
}

// elem(i) for i in [b, e). On x86-64 the loop is compiled twice, for the
// build's baseline and with AVX2 and F16C, and the CPU picks: wider vectors,
// and a float16 conversion in one instruction where the baseline calls
// libgcc for each (a float16 add took 3x MLX's time). No FMA: every CPU
// gives the same bits.
template <typename E>
void each_index_baseline(size_t b, size_t e, E& elem) {
  for (size_t i = b; i < e; ++i) elem(i);
}
#if defined(__x86_64__)
template <typename E>
__attribute__((target("avx2,f16c"))) void each_index_avx2(size_t b, size_t e, E& elem) {
  for (size_t i = b; i < e; ++i) elem(i);
}
#endif
template <typename E>
void each_index(size_t b, size_t e, E&& elem) {
#if defined(__x86_64__)
  if (cpu_has_avx2_f16c()) return each_index_avx2(b, e, elem);
#endif
  each_index_baseline(b, e, elem);
}

// each_index over [0, n), split over the pool as parallel_chunks splits.
template <typename E>
void parallel_each(size_t n, E&& elem) {
  parallel_chunks(n, [&](size_t b, size_t e) { each_index(b, e, elem); });
}

// Calls row(base, n, inner_strides) for every innermost row of the layout
// (a run of n elements along the last dim), in no set order and spread over
// the pool: for kernels that write each output element once, from inputs
// they do not write. When an operand walks the last dim with a stride (a
// transposed read, say), the last two dims go in tiles of kTile x kTile, so
// that the lines a tile's rows read along the other dim stay in cache
// rather than each row reading one element from each of n lines.
template <int N, typename Row>
void for_each_row(const CollapsedLayout& layout, Row&& row) {
  constexpr int64_t kTile = 64;
  const int nd = static_cast<int>(layout.shape.size());
  int64_t total = 1;
  for (auto d : layout.shape) total *= d;
  if (total == 0) return;
  int64_t inner_stride[N] = {};
  if (nd == 0) {
    int64_t base[N] = {};
    row(base, int64_t(1), inner_stride);
    return;
  }
  const int64_t inner = layout.shape[nd - 1];
  bool strided = false;
  for (int k = 0; k < N; ++k) {
    inner_stride[k] = layout.strides[k][nd - 1];
    strided |= inner_stride[k] > 1 || inner_stride[k] < -1;
  }
  // Rows go in tiles of `tile_rows` rows (dim nd - 2) by `tile_cols` elements.
  const bool tiled = strided && nd >= 2;
  const int64_t outer = nd >= 2 ? layout.shape[nd - 2] : 1;
  const int64_t tile_cols = tiled ? std::min(inner, kTile) : inner;
  const int64_t tile_rows = tiled ? std::min(outer, kTile) : 1;
  const int64_t col_tiles = (inner + tile_cols - 1) / tile_cols;
  const int64_t row_tiles = (outer + tile_rows - 1) / tile_rows;
  const int64_t batch = total / (inner * outer);  // the dims before the last two
  const int64_t items = batch * row_tiles * col_tiles;
  const int64_t per_item = tile_rows * tile_cols;
  auto run = [&](size_t first, size_t last) {
    for (size_t item = first; item < last; ++item) {
      int64_t rest = static_cast<int64_t>(item);
      const int64_t ct = rest % col_tiles;
      rest /= col_tiles;
      const int64_t rt = rest % row_tiles;
      rest /= row_tiles;
      int64_t base[N] = {};
      for (int d = nd - 3; d >= 0; --d) {  // the batch index, last dim fastest
        const int64_t i = rest % layout.shape[d];
        rest /= layout.shape[d];
        for (int k = 0; k < N; ++k) base[k] += i * layout.strides[k][d];
      }
      const int64_t c0 = ct * tile_cols, n = std::min(tile_cols, inner - c0);
      const int64_t r0 = rt * tile_rows, r1 = std::min(outer, r0 + tile_rows);
      for (int64_t r = r0; r < r1; ++r) {
        int64_t at[N];
        for (int k = 0; k < N; ++k) at[k] = base[k] + (nd >= 2 ? r * layout.strides[k][nd - 2] : 0) + c0 * inner_stride[k];
        row(at, n, inner_stride);
      }
    }
  };
  parallel_chunks(static_cast<size_t>(items), run,
                  static_cast<size_t>(std::max<int64_t>(1, (int64_t(1) << 15) / std::max<int64_t>(per_item, 1))));
}

// dst[j] = f(src[i]) for every element, src and dst walked by the two
// operands of `layout` (a unary map or a cast out of a strided input).
template <typename In, typename Out, typename F>
void map_rows(const CollapsedLayout& layout, const In* src, Out* dst, F&& f) {
  for_each_row<2>(layout, [&](const int64_t* base, int64_t n, const int64_t* st) {
    const In* s = src + base[0];
    Out* d = dst + base[1];
    const int64_t s0 = st[0], s1 = st[1];
    each_index(0, static_cast<size_t>(n), [&](size_t i) {
      const int64_t k = static_cast<int64_t>(i);
      d[k * s1] = f(s[k * s0]);
    });
  });
}

// True when the array's elements are exactly [data, data + size) in some
// dimension order (row- or column-major, or any transposition of them).
inline bool is_dense(const array& a) { return a.flags().contiguous && a.data_size() == a.size(); }

// Gives `out` fresh memory laid out like the dense array `like` (a unary op on
// a transposed input writes a transposed output and runs one flat loop).
inline void allocate_like(array& out, const array& like) {
  if (like.flags().row_contiguous) {
    allocate_row_contiguous(out);
    return;
  }
  Buffer b = allocator(Device(Device::cpu)).malloc(like.data_size() * out.itemsize());
  out.set_data(std::make_shared<Data>(b), like.data_size(), like.strides(), like.flags());
}

// A heap buffer of n copies of v (std::vector<bool> would pack bits).
template <typename T>
std::unique_ptr<T[]> filled(size_t n, T v) {
  std::unique_ptr<T[]> p(new T[n]);
  for (size_t i = 0; i < n; ++i) p[i] = v;
  return p;
}

// `a` itself when row-contiguous, else a row-contiguous copy (same dtype).
inline array row_contiguous_copy(const array& a) {
  if (a.flags().row_contiguous) return a;
  const size_t item = a.itemsize();
  Buffer b = allocator(Device(Device::cpu)).malloc(a.size() * item);
  auto data = std::make_shared<Data>(b);
  array out(data, a.shape(), row_major_strides(a.shape()), a.dtype());
  auto layout = collapse_dims(a.shape(), {a.strides(), out.strides()});
  const char* src = static_cast<const char*>(a.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  auto copy_as = [&](auto word) {
    using W = decltype(word);
    const W* s = reinterpret_cast<const W*>(src);
    W* d = reinterpret_cast<W*>(dst);
    for_each_row<2>(layout, [&](const int64_t* base, int64_t n, const int64_t* st) {
      const W* sp = s + base[0];
      W* dp = d + base[1];
      for (int64_t i = 0; i < n; ++i) dp[i * st[1]] = sp[i * st[0]];
    });
  };
  switch (item) {
    case 1: copy_as(uint8_t{}); break;
    case 2: copy_as(uint16_t{}); break;
    case 4: copy_as(uint32_t{}); break;
    default: copy_as(uint64_t{}); break;
  }
  return out;
}

}  // namespace alloy::cpu
