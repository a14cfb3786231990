// Shape composites: rank changes, reorderings and differences, each written
// with existing ops so that every device runs them and gradients come free.
#include <numeric>
#include <stdexcept>
#include <string>

#include "alloy/ops_shape.h"
#include "op_utils.h"

namespace alloy {

namespace {

array at_least(const array& a, int ndim, SD s) {
  if (a.ndim() >= ndim) return a;
  // MLX's placement (numpy's): 0-d -> (1,...), 1-D (n) -> (1, n) / (1, n, 1),
  // 2-D (m, n) -> (m, n, 1).
  Shape shape;
  if (a.ndim() == 0) {
    shape.assign(ndim, 1);
  } else if (a.ndim() == 1) {
    shape = ndim == 2 ? Shape{1, a.shape(0)} : Shape{1, a.shape(0), 1};
  } else {
    shape = a.shape();
    shape.push_back(1);
  }
  return reshape(a, shape, s);
}

// Reverses the marked axes with one negative-step slice view.
array flip_axes(const array& a, const std::vector<bool>& flipped, SD s) {
  Shape start(a.ndim(), 0), stop = a.shape(), step(a.ndim(), 1);
  for (int ax = 0; ax < a.ndim(); ++ax) {
    if (!flipped[ax]) continue;
    start[ax] = a.shape(ax) - 1;
    stop[ax] = -1 - a.shape(ax);  // past the front
    step[ax] = -1;
  }
  return slice(a, start, stop, step, s);
}

array roll_axis(const array& a, int shift, int ax, SD s) {
  const ShapeElem n = a.shape(ax);
  if (n == 0) return a;
  const ShapeElem k = ((shift % n) + n) % n;
  if (k == 0) return a;
  std::vector<array> parts = split(a, Shape{n - k}, ax, s);  // [front, last k]
  return concatenate({parts[1], parts[0]}, ax, s);
}

}  // namespace

array atleast_1d(const array& a, SD s) { return at_least(a, 1, s); }
array atleast_2d(const array& a, SD s) { return at_least(a, 2, s); }
array atleast_3d(const array& a, SD s) { return at_least(a, 3, s); }

array permute_dims(const array& a, std::vector<int> axes, SD s) { return transpose(a, std::move(axes), s); }

array matrix_transpose(const array& a, SD s) {
  if (a.ndim() < 2) throw std::invalid_argument("[matrix_transpose] Input array must have at least 2 dimensions.");
  return swapaxes(a, -1, -2, s);
}

array unflatten(const array& a, int axis, Shape shape, SD s) {
  if (a.ndim() == 0 || axis < -a.ndim() || axis >= a.ndim()) {
    throw std::out_of_range("[unflatten] Invalid axis " + std::to_string(axis) + " for array with " +
                            std::to_string(a.ndim()) + " dimensions.");
  }
  const int ax = axis < 0 ? axis + a.ndim() : axis;
  if (shape.empty()) throw std::invalid_argument("[unflatten] Shape to unflatten to cannot be empty.");
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) throw std::invalid_argument("[unflatten] Can only infer one dimension.");
      infer = static_cast<int>(i);
    } else if (shape[i] < 0) {
      throw std::invalid_argument("[unflatten] Invalid size " + std::to_string(shape[i]) + " in shape " +
                                  shape_to_string(shape) + ".");
    } else {
      known *= shape[i];
    }
  }
  const ShapeElem size = a.shape(ax);
  if (infer >= 0) {
    // With a zero among the known sizes the missing one is undetermined
    // (MLX divides by zero here).
    if (known == 0) {
      throw std::invalid_argument("[unflatten] Cannot infer the size -1 in shape " + shape_to_string(shape) +
                                  " when the other sizes multiply to 0.");
    }
    if (size % known == 0) shape[infer] = static_cast<ShapeElem>(size / known);
    known *= shape[infer] < 0 ? 0 : shape[infer];
  }
  if (known != size || (infer >= 0 && shape[infer] < 0)) {
    throw std::invalid_argument("[unflatten] Cannot unflatten axis " + std::to_string(ax) + " with size " +
                                std::to_string(size) + " into shape " + shape_to_string(shape) + ".");
  }
  Shape out(a.shape().begin(), a.shape().begin() + ax);
  out.insert(out.end(), shape.begin(), shape.end());
  out.insert(out.end(), a.shape().begin() + ax + 1, a.shape().end());
  return reshape(a, out, s);
}

std::vector<array> unstack(const array& a, int axis, SD s) {
  if (axis < -a.ndim() || axis >= a.ndim()) {
    throw std::out_of_range("[unstack] Axis " + std::to_string(axis) + " is out of bounds for array with " +
                            std::to_string(a.ndim()) + " dimensions.");
  }
  const int ax = axis < 0 ? axis + a.ndim() : axis;
  std::vector<array> out;
  if (a.shape(ax) == 0) return out;
  for (array& part : split(a, static_cast<int>(a.shape(ax)), ax, s)) out.push_back(squeeze(part, {ax}, s));
  return out;
}

Shape broadcast_shapes(const std::vector<Shape>& shapes) {
  if (shapes.empty()) throw std::invalid_argument("[broadcast_shapes] Must provide at least one shape.");
  Shape out = shapes[0];
  for (size_t i = 1; i < shapes.size(); ++i) out = broadcast_shapes(out, shapes[i]);
  return out;
}

std::vector<array> meshgrid(const std::vector<array>& arrays, bool sparse, const std::string& indexing, SD s) {
  if (indexing != "xy" && indexing != "ij") {
    throw std::invalid_argument("[meshgrid] Invalid indexing value. Valid values are 'xy' and 'ij'.");
  }
  const int n = static_cast<int>(arrays.size());
  std::vector<array> out;
  // Inputs are flattened; 'xy' puts the first two inputs' axes in the other order.
  Shape full(n, 1);
  std::vector<int> where(n);
  for (int i = 0; i < n; ++i) {
    where[i] = (indexing == "xy" && n >= 2 && i < 2) ? 1 - i : i;
    full[where[i]] = static_cast<ShapeElem>(arrays[i].size());
  }
  for (int i = 0; i < n; ++i) {
    Shape shape(n, 1);
    shape[where[i]] = static_cast<ShapeElem>(arrays[i].size());
    array r = reshape(arrays[i], shape, s);
    out.push_back(sparse ? r : broadcast_to(r, full, s));
  }
  return out;
}

array flip(const array& a, const std::vector<int>& axes, SD s) {
  // A repeated axis is reversed once (MLX's behaviour).
  std::vector<bool> flipped(a.ndim(), false);
  for (int axis : axes) {
    if (axis < -a.ndim() || axis >= a.ndim()) {
      throw std::out_of_range("[flip] Axis " + std::to_string(axis) + " is out of bounds for array with " +
                              std::to_string(a.ndim()) + " dimensions.");
    }
    flipped[axis < 0 ? axis + a.ndim() : axis] = true;
  }
  return flip_axes(a, flipped, s);
}

array flip(const array& a, SD s) {
  std::vector<int> axes(a.ndim());
  std::iota(axes.begin(), axes.end(), 0);
  return flip(a, axes, s);
}

array roll(const array& a, const Shape& shift, const std::vector<int>& axes, SD s) {
  if (shift.size() < axes.size()) {
    throw std::invalid_argument("[roll] At least one shift value per axis is required, " +
                                std::to_string(shift.size()) + " provided for " + std::to_string(axes.size()) +
                                " axes.");
  }
  array out = a;
  for (size_t i = 0; i < axes.size(); ++i) {
    int axis = axes[i];
    if (axis < -a.ndim() || axis >= a.ndim()) {
      throw std::out_of_range("[roll] Invalid axis " + std::to_string(axis) + " for array with " +
                              std::to_string(a.ndim()) + " dimensions.");
    }
    out = roll_axis(out, shift[i], axis < 0 ? axis + a.ndim() : axis, s);
  }
  return out;
}

array roll(const array& a, int shift, SD s) {
  return reshape(roll_axis(reshape(a, {-1}, s), shift, 0, s), a.shape(), s);
}

array diff(const array& a, int n, int axis, SD s) {
  if (n < 0) throw std::invalid_argument("[diff] Order `n` must be non-negative.");
  if (axis < -a.ndim() || axis >= a.ndim()) throw std::out_of_range("[diff] Axis is out of bounds for the array.");
  const int ax = axis < 0 ? axis + a.ndim() : axis;
  array out = a;
  n = std::min<int>(n, a.shape(ax));  // past the length every further difference is empty
  for (int i = 0; i < n; ++i) {
    const ShapeElem len = out.shape(ax);
    Shape start(out.ndim(), 0), stop = out.shape(), step(out.ndim(), 1);
    start[ax] = 1;
    array hi = slice(out, start, stop, step, s);
    start[ax] = 0;
    stop[ax] = len - 1;
    array lo = slice(out, start, stop, step, s);
    // Booleans cannot subtract; their difference is "changed" (MLX's choice).
    out = out.dtype() == Dtype::bool_ ? not_equal(hi, lo, s) : subtract(hi, lo, s);
  }
  return out;
}

}  // namespace alloy
