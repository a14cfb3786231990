// matmul with numpy's rules: 1-D operands are promoted to matrices (and the
// added dimension removed from the result), batch dimensions broadcast.
#include <stdexcept>

#include "alloy/ops.h"
#include "ops/op_utils.h"
#include "primitives/linalg.h"

namespace alloy {

array matmul(const array& a_in, const array& b_in, SD s) {
  if (a_in.ndim() == 0 || b_in.ndim() == 0) {
    throw std::invalid_argument("[matmul] operands must have at least one dimension, got shapes " +
                                shape_to_string(a_in.shape()) + " and " + shape_to_string(b_in.shape()) + ".");
  }
  Dtype dtype = promote_types(a_in.dtype(), b_in.dtype());
  array a = astype(a_in.ndim() == 1 ? reshape(a_in, {1, a_in.shape(0)}, s) : a_in, dtype, s);
  array b = astype(b_in.ndim() == 1 ? reshape(b_in, {b_in.shape(0), 1}, s) : b_in, dtype, s);
  if (a.shape(-1) != b.shape(-2)) {
    throw std::invalid_argument("[matmul] inner dimensions differ: shapes " + shape_to_string(a_in.shape()) +
                                " and " + shape_to_string(b_in.shape()) + ".");
  }
  Shape a_batch(a.shape().begin(), a.shape().end() - 2), b_batch(b.shape().begin(), b.shape().end() - 2);
  Shape batch = broadcast_shapes(a_batch, b_batch);
  Shape a_shape = batch, b_shape = batch;
  a_shape.insert(a_shape.end(), {a.shape(-2), a.shape(-1)});
  b_shape.insert(b_shape.end(), {b.shape(-2), b.shape(-1)});
  a = broadcast_to(a, a_shape, s);
  b = broadcast_to(b, b_shape, s);
  Shape out_shape = batch;
  out_shape.insert(out_shape.end(), {a.shape(-2), b.shape(-1)});
  array out(out_shape, dtype, std::make_shared<Matmul>(to_stream(s)), {a, b});
  // Remove the dimensions the 1-D promotion added.
  if (a_in.ndim() == 1 && b_in.ndim() == 1) return reshape(out, {}, s);
  if (a_in.ndim() == 1) return squeeze(out, {-2}, s);
  if (b_in.ndim() == 1) return squeeze(out, {-1}, s);
  return out;
}

}  // namespace alloy
