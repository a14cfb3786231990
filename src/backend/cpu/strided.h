// Iterating n-d strided arrays on the host. Dimensions that are contiguous
// together are merged first so most loops become one flat loop.
#pragma once

#include <cstdint>
#include <vector>

#include "alloy/array.h"

namespace alloy::cpu {

// A shape with one stride vector per operand, after merging dims that can be
// walked as one (stride[i] == stride[i+1] * shape[i+1] for every operand).
struct CollapsedLayout {
  std::vector<int64_t> shape;
  std::vector<std::vector<int64_t>> strides;  // [operand][dim]
};
CollapsedLayout collapse_dims(const Shape& shape, const std::vector<Strides>& strides);

// Calls f(offsets...) for every element in row-major order, where offsets[k]
// is the element offset of operand k. N operands, known at compile time.
template <int N, typename F>
void for_each_offset(const CollapsedLayout& layout, F&& f) {
  const int nd = static_cast<int>(layout.shape.size());
  int64_t total = 1;
  for (auto d : layout.shape) total *= d;
  if (total == 0) return;
  if (nd == 0) {
    int64_t off[N] = {};
    f(off);
    return;
  }
  const int64_t inner = layout.shape[nd - 1];
  int64_t inner_stride[N];
  for (int k = 0; k < N; ++k) inner_stride[k] = layout.strides[k][nd - 1];
  if (nd == 1) {  // one row: no odometer (and no allocation per call)
    int64_t off[N];
    for (int64_t i = 0; i < inner; ++i) {
      for (int k = 0; k < N; ++k) off[k] = i * inner_stride[k];
      f(off);
    }
    return;
  }
  std::vector<int64_t> idx(nd, 0);
  int64_t base[N] = {};
  for (int64_t done = 0; done < total; done += inner) {
    int64_t off[N];
    for (int64_t i = 0; i < inner; ++i) {
      for (int k = 0; k < N; ++k) off[k] = base[k] + i * inner_stride[k];
      f(off);
    }
    // Advance the outer index (odometer).
    for (int d = nd - 2; d >= 0; --d) {
      idx[d]++;
      for (int k = 0; k < N; ++k) base[k] += layout.strides[k][d];
      if (idx[d] < layout.shape[d]) break;
      for (int k = 0; k < N; ++k) base[k] -= layout.strides[k][d] * layout.shape[d];
      idx[d] = 0;
    }
  }
}

// Copies every element of `src` (any strides) to `dst` laid out with
// `dst_strides` (element units, same dtype). Defined in shape.cpp.
void copy_strided(const array& src, void* dst, const Strides& dst_strides);

// Gives `out` fresh row-contiguous host memory.
void allocate_row_contiguous(array& out);

}  // namespace alloy::cpu
