// mx.slice / mx.slice_update with start indices held in an array (known only
// when the graph runs): gather / scatter of one block at the clamped starts.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "alloy/ops_shape.h"
#include "op_utils.h"

namespace alloy {

namespace {

// Checks the starts and axes; returns the axes normalised, in the given order.
std::vector<int> checked_dynamic_axes(const array& a, const array& start, std::vector<int> axes, const char* op) {
  if (!is_integral(start.dtype()) || start.dtype() == Dtype::bool_) {
    throw std::invalid_argument(std::string("[") + op + "] Start indices must be integers, got type " +
                                dtype_name(start.dtype()) + ".");
  }
  if (start.ndim() > 1) {
    throw std::invalid_argument(std::string("[") + op +
                                "] array of starting indices must be zero or one dimensional but has dimension " +
                                std::to_string(start.ndim()) + ".");
  }
  if (static_cast<size_t>(start.size()) != axes.size()) {
    throw std::invalid_argument(std::string("[") + op + "] Number of starting indices " +
                                std::to_string(start.size()) + " does not match number of axes " +
                                std::to_string(axes.size()) + ".");
  }
  for (int& ax : axes) {
    if (ax < -a.ndim() || ax >= a.ndim()) {
      throw std::out_of_range(std::string("[") + op + "] Invalid axis " + std::to_string(ax) +
                              " for array with dimension " + std::to_string(a.ndim()) + ".");
    }
    if (ax < 0) ax += a.ndim();
  }
  std::vector<int> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    throw std::invalid_argument(std::string("[") + op + "] Repeated axes are not allowed.");
  }
  return axes;
}

// One 0-d int64 start per axis, clamped to [0, dim - block] so the block fits.
// (MLX reads and writes past the array for such starts; a clamp is the
// defined behaviour chosen here, as in XLA's dynamic slices.)
std::vector<array> clamped_starts(const array& a, const array& start, const std::vector<int>& axes,
                                  const Shape& block, SD s) {
  array flat = astype(reshape(start, {-1}, s), Dtype::int64, s);
  std::vector<array> out;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t hi = std::max<int64_t>(0, int64_t{a.shape(axes[i])} - block[axes[i]]);
    array si = reshape(slice(flat, Shape{static_cast<ShapeElem>(i)}, Shape{static_cast<ShapeElem>(i + 1)}, Shape{1}, s), {}, s);
    out.push_back(clip(si, array(int64_t{0}, Dtype::int64), array(hi, Dtype::int64), s));
  }
  return out;
}

}  // namespace

array slice(const array& a, const array& start_indices, std::vector<int> axes, const Shape& slice_size, SD s) {
  std::vector<int> ax = checked_dynamic_axes(a, start_indices, std::move(axes), "slice");
  if (static_cast<int>(slice_size.size()) != a.ndim()) {
    throw std::invalid_argument("[slice] Invalid slice size for array with " + std::to_string(a.ndim()) +
                                " dimensions.");
  }
  for (int i = 0; i < a.ndim(); ++i) {
    if (slice_size[i] < 0 || slice_size[i] > a.shape(i)) {
      throw std::invalid_argument("[slice] Invalid slice size " + shape_to_string(slice_size) +
                                  " for array with shape " + shape_to_string(a.shape()) + ".");
    }
  }
  if (ax.empty()) {
    // No dynamic axis: the block at the origin.
    return slice(a, Shape(a.ndim(), 0), slice_size, Shape(a.ndim(), 1), s);
  }
  // Axes not named start at 0: gather's block already begins there.
  array g = gather(a, clamped_starts(a, start_indices, ax, slice_size, s), ax, slice_size, s);
  return reshape(g, slice_size, s);
}

array slice_update(const array& a, const array& update, const array& start_indices, std::vector<int> axes, SD s) {
  std::vector<int> ax = checked_dynamic_axes(a, start_indices, std::move(axes), "slice_update");
  if (update.ndim() > a.ndim()) {
    throw std::invalid_argument("[slice_update] update with " + std::to_string(update.ndim()) +
                                " dimensions cannot update an array with " + std::to_string(a.ndim()) + ".");
  }
  // The block: the update's own sizes on the sliced axes (a 0-d update fills
  // one element there), the whole axis elsewhere, where the update broadcasts.
  Shape upd(a.ndim() - update.ndim(), 1);
  upd.insert(upd.end(), update.shape().begin(), update.shape().end());
  Shape block = a.shape();
  for (int axis : ax) block[axis] = upd[axis];
  for (int i = 0; i < a.ndim(); ++i) {
    if (block[i] > a.shape(i)) {
      throw std::invalid_argument("[slice_update] update of shape " + shape_to_string(update.shape()) +
                                  " does not fit the array of shape " + shape_to_string(a.shape()) + ".");
    }
  }
  block = broadcast_shapes(std::vector<Shape>{upd, block});
  array u = broadcast_to(astype(update, a.dtype(), s), block, s);
  if (ax.empty()) return slice_update(a, u, Shape(a.ndim(), 0), block, Shape(a.ndim(), 1), s);
  return scatter(a, clamped_starts(a, start_indices, ax, block, s), u, ax, ScatterReduce::none, s);
}

}  // namespace alloy
