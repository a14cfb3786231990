// astype / contiguous / copy / broadcasting ops.
#include <algorithm>
#include <stdexcept>

#include "alloy/ops.h"
#include "ops/op_utils.h"
#include "primitives/layout.h"

namespace alloy {

array astype(const array& a, Dtype dtype, SD s) {
  if (a.dtype() == dtype) return a;
  return array(a.shape(), dtype, std::make_shared<AsType>(to_stream(s), dtype), {a});
}

array contiguous(const array& a, bool allow_col_major, SD s) {
  if (a.is_evaluated() && (a.flags().row_contiguous || (allow_col_major && a.flags().col_contiguous))) return a;
  return array(a.shape(), a.dtype(), std::make_shared<AsType>(to_stream(s), a.dtype()), {a});
}

array copy(const array& a, SD s) {
  return array(a.shape(), a.dtype(), std::make_shared<AsType>(to_stream(s), a.dtype()), {a});
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    ShapeElem da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    ShapeElem db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw std::invalid_argument("[broadcast_shapes] shapes " + shape_to_string(a) + " and " + shape_to_string(b) +
                                  " cannot be broadcast.");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

array broadcast_to(const array& a, const Shape& shape, SD s) {
  if (a.shape() == shape) return a;
  if (static_cast<int>(shape.size()) < a.ndim()) {
    throw std::invalid_argument("[broadcast_to] cannot broadcast shape " + shape_to_string(a.shape()) + " to " +
                                shape_to_string(shape) + ".");
  }
  Shape b = broadcast_shapes(a.shape(), shape);
  if (b != shape) {
    throw std::invalid_argument("[broadcast_to] cannot broadcast shape " + shape_to_string(a.shape()) + " to " +
                                shape_to_string(shape) + ".");
  }
  return array(shape, a.dtype(), std::make_shared<Broadcast>(to_stream(s), shape), {a});
}

std::vector<array> broadcast_arrays(const std::vector<array>& inputs, SD s) {
  Shape shape;
  for (auto& in : inputs) shape = broadcast_shapes(shape, in.shape());
  std::vector<array> out;
  out.reserve(inputs.size());
  for (auto& in : inputs) out.push_back(broadcast_to(in, shape, s));
  return out;
}

}  // namespace alloy

namespace alloy {

array stop_gradient(const array& a, SD s) {
  return array(a.shape(), a.dtype(), std::make_shared<StopGradient>(to_stream(s)), {a});
}

}  // namespace alloy
