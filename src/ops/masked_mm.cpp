// segmented_mm and block_masked_mm: masks applied to the operands, then one
// broadcasting matmul, so both devices and autodiff come from existing ops.
#include <stdexcept>
#include <string>

#include "alloy/ops.h"
#include "alloy/ops_quant.h"
#include "op_utils.h"

namespace alloy {
namespace {

Dtype float_result(const char* op, const array& a, const array& b) {
  const Dtype t = promote_types(a.dtype(), b.dtype());
  if (!is_floating(t)) {
    throw std::invalid_argument(std::string("[") + op + "] Only real floating point types are supported but " +
                                dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()) +
                                " were provided which results in " + dtype_name(t) +
                                ", which is not a real floating point type.");
  }
  return t;
}

void check_inner(const char* op, const array& a, const array& b) {
  if (a.ndim() < 2 || b.ndim() < 2) {
    throw std::invalid_argument(std::string("[") + op + "] Both inputs need at least 2 dimensions.");
  }
  if (a.shape(-1) != b.shape(-2)) {
    throw std::invalid_argument(std::string("[") + op + "] Last dimension of first input with shape " +
                                shape_to_string(a.shape()) +
                                " must match second to last dimension of second input with shape " +
                                shape_to_string(b.shape()) + ".");
  }
}

// A block mask (..., ceil(rows / bs), ceil(cols / bs)) spread over (..., rows, cols).
array spread(const array& mask, int bs, ShapeElem rows, ShapeElem cols, SD s) {
  array m = repeat(repeat(mask, bs, mask.ndim() - 2, s), bs, mask.ndim() - 1, s);
  Shape start(m.ndim(), 0), stop = m.shape(), step(m.ndim(), 1);
  stop[m.ndim() - 2] = rows;
  stop[m.ndim() - 1] = cols;
  return slice(m, start, stop, step, s);
}

array apply_mask(const char* op, const array& x, const std::optional<array>& mask, int bs, Dtype t, SD s) {
  if (!mask) return x;
  if (mask->ndim() < 2) throw std::invalid_argument(std::string("[") + op + "] Masks need at least 2 dimensions.");
  const ShapeElem rows = x.shape(-2), cols = x.shape(-1);
  const ShapeElem br = (rows + bs - 1) / bs, bc = (cols + bs - 1) / bs;
  if (mask->shape(-2) != br || mask->shape(-1) != bc) {
    throw std::invalid_argument(std::string("[") + op + "] A mask for an operand of shape " +
                                shape_to_string(x.shape()) + " with block_size=" + std::to_string(bs) +
                                " must end in (" + std::to_string(br) + ", " + std::to_string(bc) + ") but has shape " +
                                shape_to_string(mask->shape()) + ".");
  }
  array full = spread(*mask, bs, rows, cols, s);
  // A dropped block contributes nothing, not 0 * inf.
  if (mask->dtype() == bool_) return where(full, x, array(0, t), s);
  return multiply(x, astype(full, t, s), s);
}

}  // namespace

array segmented_mm(const array& a, const array& b, const array& segments, SD s) {
  if (!is_integral(segments.dtype())) {
    throw std::invalid_argument("[segmented_mm] Got segments with invalid dtype. Segments must be integral.");
  }
  const Dtype t = float_result("segmented_mm", a, b);
  if (a.ndim() != 2 || b.ndim() != 2) throw std::invalid_argument("[segmented_mm] Batched matmul not supported");
  check_inner("segmented_mm", a, b);
  if (segments.ndim() < 1 || segments.shape(-1) != 2) {
    throw std::invalid_argument("[segmented_mm] The last axis of segments must hold (start, end) pairs but "
                                "segments has shape " +
                                shape_to_string(segments.shape()) + ".");
  }
  // (..., K): which inner indices each segment keeps.
  std::vector<array> ends = split(astype(segments, int32, s), 2, -1, s);
  array k = arange(0, a.shape(-1), 1, int32, s);
  array keep = logical_and(greater_equal(k, ends[0], s), less(k, ends[1], s), s);
  array am = where(expand_dims(keep, -2, s), astype(a, t, s), array(0, t), s);
  return matmul(am, astype(b, t, s), s);
}

array block_masked_mm(const array& a, const array& b, int block_size, const std::optional<array>& mask_out,
                      const std::optional<array>& mask_lhs, const std::optional<array>& mask_rhs, SD s) {
  const Dtype t = float_result("block_masked_mm", a, b);
  check_inner("block_masked_mm", a, b);
  if (block_size <= 0) {
    throw std::invalid_argument("[block_masked_mm] block_size must be positive but got " +
                                std::to_string(block_size) + ".");
  }
  const char* op = "block_masked_mm";
  array out = matmul(apply_mask(op, astype(a, t, s), mask_lhs, block_size, t, s),
                     apply_mask(op, astype(b, t, s), mask_rhs, block_size, t, s), s);
  return apply_mask(op, out, mask_out, block_size, t, s);
}

}  // namespace alloy
