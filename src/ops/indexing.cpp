// Slicing and indexing ops: slice / slice_update (views and region copies),
// gather / scatter (advanced indexing) and what is built on them.
#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "alloy/ops.h"
#include "ops/op_utils.h"
#include "primitives/indexing.h"

namespace alloy {

namespace {

// Clamps (start, stop) for the step's direction as Python slices do after
// normalisation: forward in [0, n], backward in [-1, n-1] (-1 = before 0).
void normalize_slice(ShapeElem n, ShapeElem& start, ShapeElem& stop, ShapeElem step) {
  if (step > 0) {
    start = std::clamp<ShapeElem>(start, 0, n);
    stop = std::clamp<ShapeElem>(stop, start, n);
  } else {
    start = std::clamp<ShapeElem>(start, -1, n - 1);
    stop = std::clamp<ShapeElem>(stop, -1, start);
  }
}

Shape checked_slice_shape(const array& a, Shape& start, Shape& stop, const Shape& strides, const char* op) {
  if (static_cast<int>(start.size()) != a.ndim() || static_cast<int>(stop.size()) != a.ndim() ||
      static_cast<int>(strides.size()) != a.ndim()) {
    throw std::invalid_argument(std::string("[") + op + "] start, stop and strides need one entry per dimension (" +
                                std::to_string(a.ndim()) + ").");
  }
  Shape shape(a.ndim());
  for (int i = 0; i < a.ndim(); ++i) {
    if (strides[i] == 0) throw std::invalid_argument(std::string("[") + op + "] slice step cannot be zero.");
    normalize_slice(a.shape(i), start[i], stop[i], strides[i]);
    shape[i] = slice_length(start[i], stop[i], strides[i]);
  }
  return shape;
}

// Index arrays broadcast together and brought to one integer dtype.
std::vector<array> prepare_indices(const std::vector<array>& indices, const char* op, SD s) {
  Dtype common = indices.empty() ? Dtype::int32 : indices[0].dtype();
  bool mixed = false;
  for (const array& i : indices) {
    if (!is_integral(i.dtype())) {
      throw std::invalid_argument(std::string("[") + op + "] indices must be integers, got " + dtype_name(i.dtype()) +
                                  ".");
    }
    mixed = mixed || i.dtype() != common;
  }
  std::vector<array> out = broadcast_arrays(indices, s);
  if (mixed) {
    bool wide = false;
    for (const array& i : indices) wide = wide || size_of(i.dtype()) == 8 || i.dtype() == Dtype::uint32;
    for (auto& i : out) i = astype(i, wide ? Dtype::int64 : Dtype::int32, s);
  }
  return out;
}

std::vector<int> checked_axes(const std::vector<int>& axes, size_t n_indices, int ndim, const char* op) {
  if (axes.size() != n_indices) {
    throw std::invalid_argument(std::string("[") + op + "] " + std::to_string(n_indices) + " index arrays for " +
                                std::to_string(axes.size()) + " axes.");
  }
  std::vector<int> out;
  for (int ax : axes) out.push_back(normalize_axis(ax, ndim, op));
  std::vector<int> sorted = out;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    throw std::invalid_argument(std::string("[") + op + "] repeated axis.");
  }
  return out;
}

// For take_along_axis / put_along_axis: one index array per axis, `indices`
// on `axis` and a broadcast arange on every other axis.
std::vector<array> along_axis_indices(const array& a, const array& indices, int axis, const char* op, SD s) {
  if (indices.ndim() != a.ndim()) {
    throw std::invalid_argument(std::string("[") + op + "] indices have " + std::to_string(indices.ndim()) +
                                " dimensions but the array has " + std::to_string(a.ndim()) + ".");
  }
  std::vector<array> idx;
  for (int d = 0; d < a.ndim(); ++d) {
    if (d == axis) {
      idx.push_back(indices);
      continue;
    }
    Shape shape(a.ndim(), 1);
    shape[d] = a.shape(d);
    idx.push_back(reshape(arange(0, a.shape(d), 1, Dtype::int32, s), shape, s));
  }
  return prepare_indices(idx, op, s);
}

}  // namespace

array slice(const array& a, Shape start, Shape stop, Shape strides, SD s) {
  Shape shape = checked_slice_shape(a, start, stop, strides, "slice");
  bool whole = shape == a.shape();
  for (int i = 0; whole && i < a.ndim(); ++i) whole = strides[i] == 1;
  if (whole) return a;
  return array(std::move(shape), a.dtype(),
               std::make_shared<Slice>(to_stream(s), std::move(start), std::move(stop), std::move(strides)), {a});
}

array slice_update(const array& dst, const array& update, Shape start, Shape stop, Shape strides, SD s) {
  Shape shape = checked_slice_shape(dst, start, stop, strides, "slice_update");
  if (update.ndim() > dst.ndim() || broadcast_shapes(update.shape(), shape) != shape) {
    throw std::invalid_argument("[slice_update] an update of shape " + shape_to_string(update.shape()) +
                                " does not fit the slice of shape " + shape_to_string(shape) + ".");
  }
  array upd = broadcast_to(astype(update, dst.dtype(), s), shape, s);
  return array(dst.shape(), dst.dtype(),
               std::make_shared<SliceUpdate>(to_stream(s), std::move(start), std::move(stop), std::move(strides)),
               {dst, upd});
}

array gather(const array& a, const std::vector<array>& indices, const std::vector<int>& axes,
             const Shape& slice_sizes, SD s) {
  std::vector<int> ax = checked_axes(axes, indices.size(), a.ndim(), "gather");
  if (static_cast<int>(slice_sizes.size()) != a.ndim()) {
    throw std::invalid_argument("[gather] slice_sizes " + shape_to_string(slice_sizes) + " must have one entry per " +
                                "dimension of the array of shape " + shape_to_string(a.shape()) + ".");
  }
  std::vector<array> idx = prepare_indices(indices, "gather", s);
  // No index at all (an empty array taken from, as MLX allows): nothing is
  // read, so an indexed axis may be shorter than its slice.
  const bool nothing_gathered = !idx.empty() && idx[0].size() == 0;
  for (int i = 0; i < a.ndim(); ++i) {
    const bool indexed = std::find(ax.begin(), ax.end(), i) != ax.end();
    if (slice_sizes[i] < 0 || (slice_sizes[i] > a.shape(i) && !(nothing_gathered && indexed))) {
      throw std::invalid_argument("[gather] slice_sizes " + shape_to_string(slice_sizes) +
                                  " do not fit the array of shape " + shape_to_string(a.shape()) + ".");
    }
  }
  Shape shape = idx.empty() ? Shape{} : idx[0].shape();
  shape.insert(shape.end(), slice_sizes.begin(), slice_sizes.end());
  std::vector<array> inputs{a};
  inputs.insert(inputs.end(), idx.begin(), idx.end());
  return array(std::move(shape), a.dtype(), std::make_shared<Gather>(to_stream(s), std::move(ax), slice_sizes),
               std::move(inputs));
}

array scatter(const array& a, const std::vector<array>& indices, const array& updates, const std::vector<int>& axes,
              ScatterReduce reduce, SD s) {
  std::vector<int> ax = checked_axes(axes, indices.size(), a.ndim(), "scatter");
  std::vector<array> idx = prepare_indices(indices, "scatter", s);
  Shape idx_shape = idx.empty() ? Shape{} : idx[0].shape();
  const int want = static_cast<int>(idx_shape.size()) + a.ndim();
  if (updates.ndim() != want) {
    throw std::invalid_argument("[scatter] updates of shape " + shape_to_string(updates.shape()) + " need " +
                                std::to_string(want) + " dimensions (index shape " + shape_to_string(idx_shape) +
                                " then one per dimension of the array).");
  }
  Shape upd_shape = idx_shape;
  for (int i = 0; i < a.ndim(); ++i) {
    ShapeElem b = updates.shape(static_cast<int>(idx_shape.size()) + i);
    if (b > a.shape(i)) {
      throw std::invalid_argument("[scatter] update blocks of shape " + shape_to_string(updates.shape()) +
                                  " do not fit the array of shape " + shape_to_string(a.shape()) + ".");
    }
    upd_shape.push_back(b);
  }
  std::vector<array> inputs{a};
  inputs.insert(inputs.end(), idx.begin(), idx.end());
  inputs.push_back(broadcast_to(astype(updates, a.dtype(), s), upd_shape, s));
  return array(a.shape(), a.dtype(), std::make_shared<Scatter>(to_stream(s), std::move(ax), reduce),
               std::move(inputs));
}

array take(const array& a, const array& indices, int axis, SD s) {
  if (a.ndim() == 0) throw std::invalid_argument("[take] cannot index a zero-dimensional array along an axis.");
  int ax = normalize_axis(axis, a.ndim(), "take");
  Shape sizes = a.shape();
  sizes[ax] = 1;
  array g = gather(a, {indices}, {ax}, sizes, s);
  // (I..., before..., 1, after...) -> (before..., I..., after...)
  const int m = indices.ndim();
  g = squeeze(g, {m + ax}, s);
  std::vector<int> perm;
  for (int i = 0; i < ax; ++i) perm.push_back(m + i);
  for (int i = 0; i < m; ++i) perm.push_back(i);
  for (int i = m + ax; i < g.ndim(); ++i) perm.push_back(i);
  return transpose(g, perm, s);
}

array take(const array& a, const array& indices, SD s) { return take(reshape(a, {-1}, s), indices, 0, s); }

array take_along_axis(const array& a, const array& indices, int axis, SD s) {
  int ax = normalize_axis(axis, a.ndim(), "take_along_axis");
  std::vector<array> idx = along_axis_indices(a, indices, ax, "take_along_axis", s);
  std::vector<int> axes(a.ndim());
  std::iota(axes.begin(), axes.end(), 0);
  array g = gather(a, idx, axes, Shape(a.ndim(), 1), s);
  return reshape(g, idx[0].shape(), s);
}

namespace {

// `values` scattered into `a` at `indices` along `axis` (put_along_axis's
// placement), combined by `reduce`.
array scatter_along_axis(const array& a, const array& indices, const array& values, int axis, ScatterReduce reduce,
                         const char* op, SD s) {
  int ax = normalize_axis(axis, a.ndim(), op);
  std::vector<array> idx = along_axis_indices(a, indices, ax, op, s);
  std::vector<int> axes(a.ndim());
  std::iota(axes.begin(), axes.end(), 0);
  Shape shape = idx[0].shape();
  Shape upd_shape = shape;
  upd_shape.insert(upd_shape.end(), a.ndim(), 1);
  array upd = reshape(broadcast_to(astype(values, a.dtype(), s), shape, s), upd_shape, s);
  return scatter(a, idx, upd, axes, reduce, s);
}

}  // namespace

array put_along_axis(const array& a, const array& indices, const array& values, int axis, SD s) {
  return scatter_along_axis(a, indices, values, axis, ScatterReduce::none, "put_along_axis", s);
}

array scatter_add_along_axis(const array& a, const array& indices, const array& values, int axis, SD s) {
  return scatter_along_axis(a, indices, values, axis, ScatterReduce::add, "scatter_add_along_axis", s);
}

}  // namespace alloy
