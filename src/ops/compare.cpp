// Tolerance and whole-array comparisons built from the elementwise ops.
#include "alloy/ops.h"
#include "ops/elementwise_common.h"
#include "ops/op_utils.h"

namespace alloy {

array isclose(const array& a, const array& b, double rtol, double atol, bool equal_nan, SD s) {
  broadcast_shapes_for("isclose", {a.shape(), b.shape()});
  Dtype t = to_float_dtype(promote_types(a.dtype(), b.dtype()));
  Dtype real_t = is_complex(t) ? Dtype::float32 : t;
  // |a - b| <= atol + rtol * |b| for finite values; infinities only match
  // themselves (a == b), NaNs only each other and only when asked.
  array lhs = abs(subtract(a, b, s), s);
  array rhs = add(array(atol, real_t), multiply(array(rtol, real_t), abs(b, s), s), s);
  array finite = logical_and(isfinite(a, s), isfinite(b, s), s);
  array out = logical_or(logical_and(less_equal(lhs, rhs, s), finite, s), equal(a, b, s), s);
  if (equal_nan) out = logical_or(out, logical_and(isnan(a, s), isnan(b, s), s), s);
  return out;
}

bool allclose(const array& a, const array& b, double rtol, double atol, bool equal_nan, SD s) {
  return all(isclose(a, b, rtol, atol, equal_nan, s), false, s).item<bool>();
}

bool array_equal(const array& a, const array& b, bool equal_nan, SD s) {
  if (a.shape() != b.shape()) return false;
  Dtype t = promote_types(a.dtype(), b.dtype());
  BinaryOp op = equal_nan && is_inexact(t) ? BinaryOp::EqualNan : BinaryOp::Equal;
  return all(binary_node(op, "array_equal", a, b, t, s), false, s).item<bool>();
}

}  // namespace alloy
