// view (reinterpret the bytes as another dtype) and as_strided.
#include <stdexcept>
#include <string>

#include "alloy/ops_math.h"
#include "ops/op_utils.h"
#include "primitives/view.h"

namespace alloy {

array view(const array& a, Dtype dtype, SD s) {
  if (a.dtype() == dtype) return a;
  const size_t in_item = size_of(a.dtype()), out_item = size_of(dtype);
  Shape shape = a.shape();
  if (in_item != out_item) {
    // The last axis holds the bytes that regroup, so a scalar has none to spare.
    if (a.ndim() == 0) {
      throw std::invalid_argument(std::string("[view] cannot view a 0-d array of ") + dtype_name(a.dtype()) + " as " +
                                  dtype_name(dtype) + ": the item sizes differ.");
    }
    if (out_item > in_item) {
      const size_t ratio = out_item / in_item;
      if (shape.back() % ratio != 0) {
        throw std::invalid_argument("[view] the last axis holds " + std::to_string(shape.back() * in_item) +
                                    " bytes, not a multiple of the " + std::to_string(out_item) + "-byte " +
                                    dtype_name(dtype) + ".");
      }
      shape.back() /= static_cast<ShapeElem>(ratio);
    } else {
      shape.back() *= static_cast<ShapeElem>(in_item / out_item);
    }
  }
  return array(std::move(shape), dtype, std::make_shared<View>(to_stream(s), dtype), {a});
}

array as_strided(const array& a, Shape shape, Strides strides, size_t offset, SD s) {
  if (shape.size() != strides.size()) {
    throw std::invalid_argument("[as_strided] shape " + shape_to_string(shape) + " has " +
                                std::to_string(shape.size()) + " dimensions but " + std::to_string(strides.size()) +
                                " strides were given.");
  }
  for (ShapeElem d : shape) {
    if (d < 0) throw std::invalid_argument("[as_strided] negative dimension in shape " + shape_to_string(shape) + ".");
  }
  // The strides count elements of `a` in row-major order, whatever its layout.
  array flat = reshape(a, {-1}, s);
  Shape out_shape = shape;
  return array(std::move(out_shape), a.dtype(),
               std::make_shared<AsStrided>(to_stream(s), std::move(shape), std::move(strides), offset), {flat});
}

}  // namespace alloy
