// CPU evaluation of Sort, ArgSort, Partition and ArgPartition along the last
// axis: rows are sorted by std::stable_sort under sorting::less (stable,
// NaNs last) and partitioned by std::nth_element under the same order (the
// indices with ties broken by position), which reproduces MLX's CPU results.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <type_traits>
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

// What a row is ordered by: 16-bit floats by their float values, made once
// per element (sorting::less converts both operands at every comparison,
// through libgcc on a baseline x86-64 build); other types by themselves.
template <typename T>
using SortKey = std::conditional_t<std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>, float, T>;

// fn(row, keys of the row, n) for every row, rows spread over the pool.
template <typename T, typename F>
void for_each_row_keys(const array& in, F&& fn) {
  const Rows r = rows_of(in);
  const T* x = in.data<T>();
  cpu::parallel_chunks(static_cast<size_t>(r.count), [&](size_t first, size_t last) {
    std::unique_ptr<SortKey<T>[]> keys(new SortKey<T>[static_cast<size_t>(r.n)]);  // (not vector<bool>)
    for (size_t row = first; row < last; ++row) {
      const T* xs = x + static_cast<int64_t>(row) * r.n;
      for (int64_t i = 0; i < r.n; ++i) keys[i] = static_cast<SortKey<T>>(xs[i]);
      fn(static_cast<int64_t>(row), keys.get(), r.n);
    }
  }, std::max<size_t>(1, (size_t(1) << 14) / std::max<int64_t>(r.n, 1)));
}

template <typename K>
bool key_less(K a, K b) {
  return sorting::less(a, b);
}

template <typename T>
void sort_rows(const array& in_any, array& out) {
  cpu::allocate_row_contiguous(out);
  if (out.size() == 0) return;
  array in = cpu::row_contiguous_copy(in_any);
  T* y = out.data<T>();
  for_each_row_keys<T>(in, [&](int64_t row, SortKey<T>* keys, int64_t n) {
    std::stable_sort(keys, keys + n, key_less<SortKey<T>>);
    T* ys = y + row * n;
    for (int64_t i = 0; i < n; ++i) ys[i] = static_cast<T>(keys[i]);
  });
}

template <typename T>
void argsort_rows(const array& in_any, array& out) {
  cpu::allocate_row_contiguous(out);
  if (out.size() == 0) return;
  array in = cpu::row_contiguous_copy(in_any);
  uint32_t* y = out.data<uint32_t>();
  for_each_row_keys<T>(in, [&](int64_t row, SortKey<T>* keys, int64_t n) {
    uint32_t* ys = y + row * n;
    std::iota(ys, ys + n, uint32_t(0));
    std::stable_sort(ys, ys + n, [keys](uint32_t i, uint32_t j) { return key_less(keys[i], keys[j]); });
  });
}

template <typename T>
void partition_rows(const array& in_any, array& out, int kth) {
  cpu::allocate_row_contiguous(out);
  if (out.size() == 0) return;
  array in = cpu::row_contiguous_copy(in_any);
  T* y = out.data<T>();
  for_each_row_keys<T>(in, [&](int64_t row, SortKey<T>* keys, int64_t n) {
    std::nth_element(keys, keys + kth, keys + n, key_less<SortKey<T>>);
    T* ys = y + row * n;
    for (int64_t i = 0; i < n; ++i) ys[i] = static_cast<T>(keys[i]);
  });
}

template <typename T>
void argpartition_rows(const array& in_any, array& out, int kth) {
  cpu::allocate_row_contiguous(out);
  if (out.size() == 0) return;
  array in = cpu::row_contiguous_copy(in_any);
  uint32_t* y = out.data<uint32_t>();
  for_each_row_keys<T>(in, [&](int64_t row, SortKey<T>* keys, int64_t n) {
    uint32_t* ys = y + row * n;
    std::iota(ys, ys + n, uint32_t(0));
    std::nth_element(ys, ys + kth, ys + n, [keys](uint32_t i, uint32_t j) {
      if (key_less(keys[i], keys[j])) return true;
      if (key_less(keys[j], keys[i])) return false;
      return i < j;
    });
  });
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
