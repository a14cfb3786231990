// gather_mm: a take of whole matrices along each operand's flattened batch,
// then a broadcasting matmul. take and matmul carry the gradients.
#include <stdexcept>
#include <string>

#include "alloy/ops.h"
#include "alloy/ops_quant.h"
#include "op_utils.h"

namespace alloy {
namespace {

// Flattens the batch of `m` (ndim >= 2) and picks matrices by `indices`,
// which default to every batch entry in order (in the batch's shape).
array pick_matrices(const array& m, const std::optional<array>& indices, SD s) {
  const ShapeElem rows = m.shape(-2), cols = m.shape(-1);
  Shape batch(m.shape().begin(), m.shape().end() - 2);
  int64_t n = 1;
  for (ShapeElem d : batch) n *= d;
  array flat = reshape(m, {static_cast<ShapeElem>(n), rows, cols}, s);
  array idx = indices ? *indices : reshape(arange(0, static_cast<double>(n), 1, uint32, s), batch, s);
  return take(flat, idx, 0, s);
}

}  // namespace

array gather_mm(const array& a_in, const array& b_in, const std::optional<array>& lhs_indices,
                const std::optional<array>& rhs_indices, bool /*sorted_indices: a speed hint only*/, SD s) {
  for (const auto* idx : {&lhs_indices, &rhs_indices}) {
    if (*idx && !is_integral((*idx)->dtype())) {
      throw std::invalid_argument("[gather_mm] Got indices with invalid dtype. Indices must be integral.");
    }
  }
  const Dtype t = promote_types(a_in.dtype(), b_in.dtype());
  if (!is_floating(t)) {
    throw std::invalid_argument(std::string("[gather_mm] Only real floating point types are supported but ") +
                                dtype_name(a_in.dtype()) + " and " + dtype_name(b_in.dtype()) +
                                " were provided which results in " + dtype_name(t) +
                                ", which is not a real floating point type.");
  }
  // Vectors multiply as a row (a) or a column (b), squeezed afterwards.
  array a = a_in.ndim() == 1 ? expand_dims(a_in, 0, s) : a_in;
  array b = b_in.ndim() == 1 ? expand_dims(b_in, -1, s) : b_in;
  if (a.ndim() < 1 || b.ndim() < 1 || a.shape(-1) != b.shape(-2)) {
    throw std::invalid_argument("[gather_mm] Last dimension of first input with shape " + shape_to_string(a.shape()) +
                                " must match second to last dimension of second input with shape " +
                                shape_to_string(b.shape()) + ".");
  }
  array out = matmul(astype(pick_matrices(a, lhs_indices, s), t, s), astype(pick_matrices(b, rhs_indices, s), t, s), s);
  if (a_in.ndim() == 1) out = squeeze(out, {-2}, s);
  if (b_in.ndim() == 1) out = squeeze(out, {-1}, s);
  return out;
}

}  // namespace alloy
