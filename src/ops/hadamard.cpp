// hadamard_transform as log2(n) butterfly stages of existing ops: stage h
// pairs elements h apart and replaces (a, b) with (a + b, a - b), which
// builds the Sylvester-ordered matrix without forming it. Half types run in
// float32 and round once at the end.
#include <cmath>
#include <stdexcept>
#include <string>

#include "alloy/ops.h"
#include "alloy/ops_quant.h"

namespace alloy {

array hadamard_transform(const array& a, std::optional<float> scale, SD s) {
  if (a.size() == 0) throw std::invalid_argument("[hadamard_transform] Does not support empty arrays.");
  const Dtype out = is_floating(a.dtype()) ? a.dtype() : float32;
  const Dtype work = out == float64 ? float64 : float32;
  const ShapeElem n = a.ndim() ? a.shape(-1) : 1;
  if ((n & (n - 1)) != 0) {
    std::string why = (n % 12 == 0 || n % 20 == 0 || n % 28 == 0)
                          ? "sizes m*2^k with m in (12, 20, 28) are not implemented in Alloy yet"
                          : "Only supports n = m*2^k where m in (1, 12, 20, 28)";
    throw std::invalid_argument("[hadamard_transform] " + why + "; got n = " + std::to_string(n) + ".");
  }
  const double k = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(n));
  // Nothing to do, and MLX then hands back the input as it is (type included).
  if (n == 1 && k == 1.0) return a;
  Shape lead(a.shape().begin(), a.shape().end() - (a.ndim() ? 1 : 0));
  array x = astype(a, work, s);
  for (ShapeElem h = 1; h < n; h *= 2) {
    Shape split = lead;
    split.insert(split.end(), {n / (2 * h), 2, h});
    x = reshape(x, split, s);
    const int pair_axis = static_cast<int>(split.size()) - 2;
    auto halves = alloy::split(x, 2, pair_axis, s);
    x = concatenate({add(halves[0], halves[1], s), subtract(halves[0], halves[1], s)}, pair_axis, s);
  }
  return astype(multiply(reshape(x, a.shape(), s), array(k, work), s), out, s);
}

}  // namespace alloy
