// Scans: cumsum cumprod cummax cummin logcumsumexp along one axis (or flattened).
#include <stdexcept>
#include <string>

#include "alloy/ops.h"
#include "alloy/ops_math.h"
#include "ops/op_utils.h"
#include "primitives/scan.h"

namespace alloy {

namespace {
array scan_node(ScanOp op, const array& a, int axis_in, bool reverse, bool inclusive, SD s) {
  const char* name = kScanOpNames[static_cast<int>(op)];
  int axis = normalize_axis(axis_in, a.ndim(), name);
  // MLX: running sums of bool count in int32; running products of bool stay
  // bool, which is a running minimum (true until the first false).
  if (a.dtype() == Dtype::bool_ && op == ScanOp::Prod) return scan_node(ScanOp::Min, a, axis_in, reverse, inclusive, s);
  array x = a;
  if (a.dtype() == Dtype::bool_ && op == ScanOp::Sum) x = astype(a, Dtype::int32, s);
  // MLX: logcumsumexp of integers and bool computes in float32.
  if (op == ScanOp::LogAddExp && !is_floating(a.dtype()) && !is_complex(a.dtype())) x = astype(a, Dtype::float32, s);
  return array(x.shape(), x.dtype(), std::make_shared<Scan>(to_stream(s), op, axis, reverse, inclusive), {x});
}
}  // namespace

array cumsum(const array& a, int axis, bool reverse, bool inclusive, SD s) {
  return scan_node(ScanOp::Sum, a, axis, reverse, inclusive, s);
}
array cumsum(const array& a, bool reverse, bool inclusive, SD s) {
  return cumsum(reshape(a, {-1}, s), 0, reverse, inclusive, s);
}
array cumprod(const array& a, int axis, bool reverse, bool inclusive, SD s) {
  return scan_node(ScanOp::Prod, a, axis, reverse, inclusive, s);
}
array cummax(const array& a, int axis, bool reverse, bool inclusive, SD s) {
  return scan_node(ScanOp::Max, a, axis, reverse, inclusive, s);
}
array cummin(const array& a, int axis, bool reverse, bool inclusive, SD s) {
  return scan_node(ScanOp::Min, a, axis, reverse, inclusive, s);
}
array logcumsumexp(const array& a, int axis, bool reverse, bool inclusive, SD s) {
  return scan_node(ScanOp::LogAddExp, a, axis, reverse, inclusive, s);
}
array logcumsumexp(const array& a, bool reverse, bool inclusive, SD s) {
  return logcumsumexp(reshape(a, {-1}, s), 0, reverse, inclusive, s);
}

}  // namespace alloy
