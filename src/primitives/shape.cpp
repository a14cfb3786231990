#include "primitives/shape.h"

#include <algorithm>
#include <numeric>

#include "alloy/ops.h"

namespace alloy {

ArrayFlags view_flags(const Shape& shape, const Strides& strides, size_t* data_size) {
  ArrayFlags f;
  const size_t n = shape_size(shape);
  const int nd = static_cast<int>(shape.size());
  if (n == 0) {
    *data_size = 0;
    return f;  // an empty array is trivially contiguous
  }
  int64_t expect = 1;
  for (int i = nd - 1; i >= 0; --i) {
    if (shape[i] != 1 && strides[i] != expect) f.row_contiguous = false;
    expect *= shape[i];
  }
  expect = 1;
  for (int i = 0; i < nd; ++i) {
    if (shape[i] != 1 && strides[i] != expect) f.col_contiguous = false;
    expect *= shape[i];
  }
  // Contiguous in some order: the non-trivial dims, sorted by stride, tile
  // memory densely (a permutation of row-major strides).
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, extent)
  for (int i = 0; i < nd; ++i) {
    if (shape[i] != 1) dims.emplace_back(strides[i], shape[i]);
  }
  std::sort(dims.begin(), dims.end());
  bool dense = true;
  expect = 1;
  for (auto [st, ext] : dims) {
    if (st != expect) dense = false;
    expect *= ext;
  }
  f.contiguous = dense;
  int64_t lo = 0, hi = 0;
  for (int i = 0; i < nd; ++i) {
    int64_t span = strides[i] * (shape[i] - 1);
    (span < 0 ? lo : hi) += span;
  }
  *data_size = dense ? n : static_cast<size_t>(hi - lo + 1);
  return f;
}

void make_view(const array& in, array& out, const Strides& strides, int64_t offset) {
  size_t data_size = 0;
  ArrayFlags flags = view_flags(out.shape(), strides, &data_size);
  // An empty view must not point past its buffer.
  if (out.size() == 0) offset = 0;
  out.copy_shared_buffer(in, strides, flags, data_size, offset);
}

bool reshape_strides(const Shape& old_shape, const Strides& old_strides, const Shape& new_shape,
                     Strides& new_strides) {
  const int new_nd = static_cast<int>(new_shape.size());
  new_strides.assign(new_nd, 1);
  if (shape_size(new_shape) == 0) {
    new_strides = row_major_strides(new_shape);
    return true;
  }
  // Size-1 dims never constrain the layout: drop them from the old side.
  Shape os;
  Strides ost;
  for (size_t i = 0; i < old_shape.size(); ++i) {
    if (old_shape[i] != 1) {
      os.push_back(old_shape[i]);
      ost.push_back(old_strides[i]);
    }
  }
  const int old_nd = static_cast<int>(os.size());
  // Match groups of old dims to groups of new dims with equal products; a
  // group of old dims must be walkable as one row-major run.
  int oi = 0, oj = 1, ni = 0, nj = 1;
  while (ni < new_nd && oi < old_nd) {
    int64_t np = new_shape[ni], op = os[oi];
    while (np != op) {
      if (np < op) {
        np *= new_shape[nj++];
      } else {
        op *= os[oj++];
      }
    }
    for (int k = oi; k < oj - 1; ++k) {
      if (ost[k] != os[k + 1] * ost[k + 1]) return false;
    }
    new_strides[nj - 1] = ost[oj - 1];
    for (int k = nj - 1; k > ni; --k) new_strides[k - 1] = new_strides[k] * new_shape[k];
    ni = nj++;
    oi = oj++;
  }
  // Trailing size-1 dims of the new shape keep stride 1 (never used to move).
  return true;
}

bool reshape_view(const array& in, array& out) {
  Strides strides;
  if (!reshape_strides(in.shape(), in.strides(), out.shape(), strides)) return false;
  make_view(in, out, strides);
  return true;
}

void transpose_view(const array& in, array& out, const std::vector<int>& axes) {
  Strides strides(axes.size());
  for (size_t i = 0; i < axes.size(); ++i) strides[i] = in.strides()[axes[i]];
  make_view(in, out, strides);
}

// ---- Reshape

bool Reshape::is_equivalent(const Primitive& o) const {
  auto* other = dynamic_cast<const Reshape*>(&o);
  return other && other->shape_ == shape_;
}

std::vector<array> Reshape::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                const std::vector<int>&, const std::vector<array>&) {
  return {reshape(cotangents[0], primals[0].shape(), stream())};
}

std::vector<array> Reshape::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                const std::vector<int>&) {
  return {reshape(tangents[0], shape_, stream())};
}

// ---- Transpose

bool Transpose::is_equivalent(const Primitive& o) const {
  auto* other = dynamic_cast<const Transpose*>(&o);
  return other && other->axes_ == axes_;
}

std::vector<array> Transpose::vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                                  const std::vector<int>&, const std::vector<array>&) {
  std::vector<int> inverse(axes_.size());
  for (size_t i = 0; i < axes_.size(); ++i) inverse[axes_[i]] = static_cast<int>(i);
  return {transpose(cotangents[0], inverse, stream())};
}

std::vector<array> Transpose::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                  const std::vector<int>&) {
  return {transpose(tangents[0], axes_, stream())};
}

// ---- Concatenate

std::vector<array> Concatenate::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                    const std::vector<int>& argnums, const std::vector<array>&) {
  const array& cot = cotangents[0];
  std::vector<int> starts(primals.size() + 1, 0);
  for (size_t i = 0; i < primals.size(); ++i) starts[i + 1] = starts[i] + primals[i].shape(axis_);
  std::vector<array> grads;
  for (int arg : argnums) {
    Shape start(cot.ndim(), 0), stop = cot.shape(), step(cot.ndim(), 1);
    start[axis_] = starts[arg];
    stop[axis_] = starts[arg + 1];
    grads.push_back(slice(cot, start, stop, step, stream()));
  }
  return grads;
}

std::vector<array> Concatenate::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                                    const std::vector<int>& argnums) {
  std::vector<array> parts;
  for (size_t i = 0; i < primals.size(); ++i) {
    auto it = std::find(argnums.begin(), argnums.end(), static_cast<int>(i));
    parts.push_back(it == argnums.end() ? zeros_like(primals[i], stream())
                                        : tangents[static_cast<size_t>(it - argnums.begin())]);
  }
  return {concatenate(parts, axis_, stream())};
}

}  // namespace alloy
