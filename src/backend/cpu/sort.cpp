// CPU evaluation of Sort, ArgSort, Partition and ArgPartition along the last
// axis: rows are sorted by std::stable_sort under sorting::less (stable,
// NaNs last) and partitioned by std::nth_element under the same order (the
// indices with ties broken by position), which reproduces MLX's CPU results.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/common/sort_ops.h"
#include "backend/cpu/elementwise_loops.h"
#include "primitives/sort.h"

namespace alloy {

namespace {

struct Rows {
  int64_t count = 0;
  int64_t n = 0;
};

Rows rows_of(const array& a) {
  Rows r;
  r.n = a.ndim() == 0 ? 1 : a.shape(a.ndim() - 1);
  r.count = r.n == 0 ? 0 : static_cast<int64_t>(a.size()) / r.n;
  return r;
}

template <typename T>
void sort_rows(const array& in_any, array& out) {
  cpu::allocate_row_contiguous(out);
  if (out.size() == 0) return;
  array in = cpu::row_contiguous_copy(in_any);
  const Rows r = rows_of(in);
  const T* x = in.data<T>();
  T* y = out.data<T>();
  std::copy(x, x + r.count * r.n, y);
  for (int64_t row = 0; row < r.count; ++row) {
    std::stable_sort(y + row * r.n, y + (row + 1) * r.n, [](T a, T b) { return sorting::less(a, b); });
  }
}

template <typename T>
void argsort_rows(const array& in_any, array& out) {
  cpu::allocate_row_contiguous(out);
  if (out.size() == 0) return;
  array in = cpu::row_contiguous_copy(in_any);
  const Rows r = rows_of(in);
  const T* x = in.data<T>();
  uint32_t* y = out.data<uint32_t>();
  for (int64_t row = 0; row < r.count; ++row) {
    const T* xs = x + row * r.n;
    uint32_t* ys = y + row * r.n;
    std::iota(ys, ys + r.n, uint32_t(0));
    std::stable_sort(ys, ys + r.n, [xs](uint32_t i, uint32_t j) { return sorting::less(xs[i], xs[j]); });
  }
}

template <typename T>
void partition_rows(const array& in_any, array& out, int kth) {
  cpu::allocate_row_contiguous(out);
  if (out.size() == 0) return;
  array in = cpu::row_contiguous_copy(in_any);
  const Rows r = rows_of(in);
  const T* x = in.data<T>();
  T* y = out.data<T>();
  std::copy(x, x + r.count * r.n, y);
  for (int64_t row = 0; row < r.count; ++row) {
    T* ys = y + row * r.n;
    std::nth_element(ys, ys + kth, ys + r.n, [](T a, T b) { return sorting::less(a, b); });
  }
}

template <typename T>
void argpartition_rows(const array& in_any, array& out, int kth) {
  cpu::allocate_row_contiguous(out);
  if (out.size() == 0) return;
  array in = cpu::row_contiguous_copy(in_any);
  const Rows r = rows_of(in);
  const T* x = in.data<T>();
  uint32_t* y = out.data<uint32_t>();
  for (int64_t row = 0; row < r.count; ++row) {
    const T* xs = x + row * r.n;
    uint32_t* ys = y + row * r.n;
    std::iota(ys, ys + r.n, uint32_t(0));
    std::nth_element(ys, ys + kth, ys + r.n, [xs](uint32_t i, uint32_t j) {
      if (sorting::less(xs[i], xs[j])) return true;
      if (sorting::less(xs[j], xs[i])) return false;
      return i < j;
    });
  }
}

}  // namespace

void Partition::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  dispatch_dtype(inputs[0].dtype(),
                 [&](auto tag) { partition_rows<typename decltype(tag)::type>(inputs[0], outputs[0], kth_); });
}

void ArgPartition::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  dispatch_dtype(inputs[0].dtype(),
                 [&](auto tag) { argpartition_rows<typename decltype(tag)::type>(inputs[0], outputs[0], kth_); });
}

void Sort::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  dispatch_dtype(inputs[0].dtype(), [&](auto tag) { sort_rows<typename decltype(tag)::type>(inputs[0], outputs[0]); });
}

void ArgSort::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  dispatch_dtype(inputs[0].dtype(),
                 [&](auto tag) { argsort_rows<typename decltype(tag)::type>(inputs[0], outputs[0]); });
}

}  // namespace alloy
