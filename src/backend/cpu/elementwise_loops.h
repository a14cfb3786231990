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

// Calls row(base, n, inner_strides) for every innermost row of the layout, in
// row-major order: the kernels pick a flat loop from the inner strides.
template <int N, typename Row>
void for_each_row(const CollapsedLayout& layout, Row&& row) {
  const int nd = static_cast<int>(layout.shape.size());
  int64_t total = 1;
  for (auto d : layout.shape) total *= d;
  if (total == 0) return;
  int64_t base[N] = {};
  int64_t inner_stride[N] = {};
  if (nd == 0) {
    row(base, int64_t(1), inner_stride);
    return;
  }
  const int64_t inner = layout.shape[nd - 1];
  for (int k = 0; k < N; ++k) inner_stride[k] = layout.strides[k][nd - 1];
  std::vector<int64_t> idx(nd, 0);
  for (int64_t done = 0; done < total; done += inner) {
    row(base, inner, inner_stride);
    for (int d = nd - 2; d >= 0; --d) {
      idx[d]++;
      for (int k = 0; k < N; ++k) base[k] += layout.strides[k][d];
      if (idx[d] < layout.shape[d]) break;
      for (int k = 0; k < N; ++k) base[k] -= layout.strides[k][d] * layout.shape[d];
      idx[d] = 0;
    }
  }
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
