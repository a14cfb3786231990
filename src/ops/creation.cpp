// Creation ops: constant-filled arrays, ranges, identity matrices.
#include <cmath>
#include <stdexcept>

#include "alloy/ops.h"
#include "ops/op_utils.h"
#include "primitives/creation.h"

namespace alloy {

namespace {
void check_shape(const Shape& shape, const char* op) {
  for (auto d : shape) {
    if (d < 0) {
      throw std::invalid_argument(std::string("[") + op + "] negative dimension in shape " + shape_to_string(shape) +
                                  ".");
    }
  }
}
}  // namespace

array full(const Shape& shape, const array& value, std::optional<Dtype> dtype, SD s) {
  check_shape(shape, "full");
  Dtype d = dtype.value_or(value.dtype());
  // A row-contiguous copy of the broadcast value (not a stride-0 view), so
  // the result is ordinary memory; gradients flow back through Broadcast.
  return copy(broadcast_to(astype(value, d, s), shape, s), s);
}

array zeros(const Shape& shape, Dtype dtype, SD s) { return full(shape, array(0, dtype), dtype, s); }
array ones(const Shape& shape, Dtype dtype, SD s) { return full(shape, array(1, dtype), dtype, s); }
array zeros_like(const array& a, SD s) { return zeros(a.shape(), a.dtype(), s); }
array ones_like(const array& a, SD s) { return ones(a.shape(), a.dtype(), s); }
array full_like(const array& a, const array& value, SD s) { return full(a.shape(), value, a.dtype(), s); }

array arange(double start, double stop, double step, Dtype dtype, SD s) {
  if (step == 0) throw std::invalid_argument("[arange] step must be nonzero.");
  if (!std::isfinite(start) || !std::isfinite(stop) || std::isnan(step)) {
    throw std::invalid_argument("[arange] start and stop must be finite and step a number.");
  }
  if (dtype == Dtype::bool_) throw std::invalid_argument("[arange] bool is not a valid dtype for a range.");
  if (std::isinf(step)) {
    // An infinite step leaves the start alone in the range, if it is in it (MLX, numpy).
    const bool in_range = step > 0 ? start < stop : start > stop;
    return arange(start, in_range ? start + 1 : start, 1.0, dtype, s);
  }
  double n = std::ceil((stop - start) / step);
  if (n > static_cast<double>(INT32_MAX)) {
    throw std::invalid_argument("[arange] the range has " + std::to_string(n) + " elements, more than fit in a shape.");
  }
  ShapeElem len = n > 0 ? static_cast<ShapeElem>(n) : 0;
  if (is_integral(dtype)) {
    // As MLX and numpy: the first value and the step are those of the
    // dtype, the step being the difference of the first two values made
    // integers (arange(-1.3, 2.2, 0.5, int32) is -1, 0, 1, ..., 5).
    const double first = std::trunc(start);
    step = std::trunc(start + step) - first;
    start = first;
  }
  return array({len}, dtype, std::make_shared<Arange>(to_stream(s), start, step), {});
}

array arange(double start, double stop, double step, SD s) {
  bool ints = start == std::floor(start) && stop == std::floor(stop) && step == std::floor(step);
  return arange(start, stop, step, ints ? Dtype::int32 : Dtype::float32, s);
}

array arange(double stop, SD s) { return arange(0.0, stop, 1.0, s); }

array linspace(double start, double stop, int num, Dtype dtype, SD s) {
  if (num < 0) throw std::invalid_argument("[linspace] num must be non-negative, got " + std::to_string(num) + ".");
  return array({num}, dtype, std::make_shared<Linspace>(to_stream(s), start, stop), {});
}

array linspace(double start, double stop, int num, bool endpoint, Dtype dtype, SD s) {
  if (endpoint || num <= 1) return linspace(start, stop, num, dtype, s);
  // The same points as num + 1 with the endpoint, less the last: their last
  // is start + (num - 1) (stop - start) / num.
  return linspace(start, start + (stop - start) * (num - 1) / num, num, dtype, s);
}

array eye(int n, int m, int k, Dtype dtype, SD s) {
  if (m < 0) m = n;
  if (n < 0) throw std::invalid_argument("[eye] n must be non-negative, got " + std::to_string(n) + ".");
  return array({n, m}, dtype, std::make_shared<Eye>(to_stream(s), k), {});
}

array identity(int n, Dtype dtype, SD s) { return eye(n, n, 0, dtype, s); }

}  // namespace alloy
