// CPU evaluation of slicing, gather and scatter.
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "backend/cpu/elementwise_loops.h"
#include "backend/cpu/strided.h"
#include "core/cast.h"
#include "primitives/indexing.h"

namespace alloy {

namespace {

// Element offset of the row-major position `i` of `shape` under `strides`.
int64_t elem_to_loc(size_t i, const Shape& shape, const Strides& strides) {
  int64_t loc = 0;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0 && i > 0; --d) {
    loc += static_cast<int64_t>(i % shape[d]) * strides[d];
    i /= shape[d];
  }
  return loc;
}

// Marks an index position whose block a scatter drops (out of range).
constexpr int64_t kDropped = INT64_MIN;

// For every position of the (common) index shape, the element offset into
// `target` (shape `target_shape`, strides `target_strides`) of the block the
// indices select. Negative indices wrap once (as MLX); what is still out of
// range is clamped to the nearest valid block (gathers) or marked kDropped
// (scatters drop the update), so no index ever reads or writes out of bounds.
std::vector<int64_t> block_bases(const std::vector<array>& idx, const std::vector<int>& axes,
                                 const Shape& target_shape, const Strides& target_strides, const Shape& block,
                                 bool drop_out_of_range, const char* op) {
  Shape idx_shape = idx.empty() ? Shape{} : idx[0].shape();
  std::vector<int64_t> bases(shape_size(idx_shape), 0);
  for (size_t k = 0; k < idx.size(); ++k) {
    const int ax = axes[k];
    const int64_t n = target_shape[ax];
    const int64_t limit = n - block[ax];  // the block must fit
    dispatch_dtype(idx[k].dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        const T* p = idx[k].data<T>();
        // Index positions in row-major order (an odometer, no division per
        // position; broadcast index arrays have zero strides).
        size_t i = 0;
        cpu::for_each_offset<1>(cpu::collapse_dims(idx_shape, {idx[k].strides()}), [&](const int64_t* off) {
          const size_t at = i++;
          if (bases[at] == kDropped) return;
          int64_t v = static_cast<int64_t>(p[off[0]]);
          if (v < 0) v += n;
          if (v < 0 || v > limit) {
            if (drop_out_of_range) {
              bases[at] = kDropped;
              return;
            }
            v = std::clamp<int64_t>(v, 0, std::max<int64_t>(limit, 0));
          }
          bases[at] += v * target_strides[ax];
        });
      } else {
        throw std::invalid_argument(std::string("[") + op + "] indices must be integers, got " +
                                    dtype_name(idx[k].dtype()) + ".");
      }
    });
  }
  return bases;
}

}  // namespace

void Slice::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  slice_view(inputs[0], outputs[0], start_, strides_);
}

void Slice::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  slice_view(inputs[0], outputs[0], start_, strides_);
}

void SliceUpdate::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& dst = inputs[0];
  const array& update = inputs[1];
  array& out = outputs[0];
  cpu::allocate_row_contiguous(out);
  cpu::copy_strided(dst, out.raw_data(), out.strides());
  if (update.size() == 0) return;
  Strides region(out.ndim());
  int64_t offset = 0;
  for (int i = 0; i < out.ndim(); ++i) {
    region[i] = out.strides()[i] * strides_[i];
    offset += out.strides()[i] * start_[i];
  }
  cpu::copy_strided(update, static_cast<char*>(out.raw_data()) + offset * static_cast<int64_t>(out.itemsize()),
                    region);
}

void Gather::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& a = inputs[0];
  array& out = outputs[0];
  cpu::allocate_row_contiguous(out);
  std::vector<array> idx(inputs.begin() + 1, inputs.end());
  std::vector<int64_t> bases = block_bases(idx, axes_, a.shape(), a.strides(), slice_sizes_, false, "gather");
  const size_t block = shape_size(slice_sizes_);
  if (block == 0) return;
  auto layout = cpu::collapse_dims(slice_sizes_, {a.strides(), row_major_strides(slice_sizes_)});
  // A block contiguous in the source too (rows of the last axes, as
  // x[b, y, x_idx, :] takes) is one memcpy per index.
  const bool contiguous_block = layout.shape.size() == 1 && layout.strides[0][0] == 1 && layout.strides[1][0] == 1;
  // Indices split across the pool once there are enough elements to move.
  const size_t min_indices = std::max<size_t>(1, (size_t(1) << 15) / block);
  dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = a.data<T>();
    T* dst = out.data<T>();
    cpu::parallel_chunks(
        bases.size(),
        [&](size_t begin, size_t end) {
          for (size_t i = begin; i < end; ++i) {
            const T* s = src + bases[i];
            T* d = dst + i * block;
            if (contiguous_block) {
              std::memcpy(d, s, block * sizeof(T));
            } else {
              cpu::for_each_offset<2>(layout, [&](const int64_t* off) { d[off[1]] = s[off[0]]; });
            }
          }
        },
        min_indices);
  });
}

void Scatter::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& a = inputs[0];
  const array& updates = inputs.back();
  array& out = outputs[0];
  cpu::allocate_row_contiguous(out);
  cpu::copy_strided(a, out.raw_data(), out.strides());
  std::vector<array> idx(inputs.begin() + 1, inputs.end() - 1);
  const int nd = a.ndim();
  const int idx_nd = updates.ndim() - nd;
  Shape idx_shape(updates.shape().begin(), updates.shape().begin() + idx_nd);
  Shape block(updates.shape().begin() + idx_nd, updates.shape().end());
  Strides idx_strides(updates.strides().begin(), updates.strides().begin() + idx_nd);
  Strides block_strides(updates.strides().begin() + idx_nd, updates.strides().end());
  std::vector<int64_t> bases = block_bases(idx, axes_, a.shape(), out.strides(), block, true, "scatter");
  if (shape_size(block) == 0) return;
  auto layout = cpu::collapse_dims(block, {block_strides, out.strides()});
  dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* upd = updates.data<T>();
    T* dst = out.data<T>();
    auto run = [&](auto combine) {
      for (size_t i = 0; i < bases.size(); ++i) {
        if (bases[i] == kDropped) continue;
        const T* u = upd + elem_to_loc(i, idx_shape, idx_strides);
        T* d = dst + bases[i];
        cpu::for_each_offset<2>(layout, [&](const int64_t* off) { d[off[1]] = combine(d[off[1]], u[off[0]]); });
      }
    };
    switch (reduce_) {
      case ScatterReduce::none: return run([](T, T b) { return b; });
      case ScatterReduce::add: return run([](T x, T y) { return cast_value<T>(x + y); });
      case ScatterReduce::prod: return run([](T x, T y) { return cast_value<T>(x * y); });
      case ScatterReduce::max:
      case ScatterReduce::min:
        if constexpr (is_complex_t<T>::value) {
          throw std::invalid_argument("[scatter] max/min are not defined for complex64.");
        } else if (reduce_ == ScatterReduce::max) {
          return run([](T x, T y) { return y > x ? y : x; });
        } else {
          return run([](T x, T y) { return y < x ? y : x; });
        }
    }
  });
}

}  // namespace alloy
