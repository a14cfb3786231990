// Products built from matmul, multiply and sum: inner, outer, kron,
// tensordot, addmm, vecdot.
#include "linalg_composites.h"

#include <stdexcept>
#include <string>

#include "alloy/ops_shape.h"
#include "op_utils.h"

namespace alloy {

array inexact_matmul(const array& a, const array& b, SD s) {
  Dtype t = promote_types(a.dtype(), b.dtype());
  if (!is_inexact(t)) {
    throw std::invalid_argument(std::string("[matmul] Only inexact types are supported but ") +
                                dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()) +
                                " were provided which results in " + dtype_name(t) +
                                ", which is not a floating point type.");
  }
  return matmul(a, b, s);
}

array inner(const array& a, const array& b, SD s) {
  if (a.ndim() == 0 || b.ndim() == 0) return multiply(a, b, s);
  if (a.shape(-1) != b.shape(-1)) throw std::invalid_argument("[inner] a and b must have the same last dimension.");
  return tensordot(a, b, {-1}, {-1}, s);
}

array outer(const array& a, const array& b, SD s) {
  return multiply(reshape(a, {-1, 1}, s), reshape(b, {1, -1}, s), s);
}

array kron(const array& a, const array& b, SD s) {
  if (a.size() == 0 || b.size() == 0) throw std::invalid_argument("[kron] Input arrays cannot be empty.");
  const int nd = std::max(a.ndim(), b.ndim());
  // Interleave: a as (a0, 1, a1, 1, ...), b as (1, b0, 1, b1, ...); the
  // product's (ai, bi) pairs merge into ai * bi.
  Shape sa, sb, out;
  for (int i = 0; i < nd; ++i) {
    const int ia = i - (nd - a.ndim()), ib = i - (nd - b.ndim());
    const ShapeElem da = ia >= 0 ? a.shape(ia) : 1, db = ib >= 0 ? b.shape(ib) : 1;
    sa.insert(sa.end(), {da, 1});
    sb.insert(sb.end(), {1, db});
    out.push_back(da * db);
  }
  return reshape(multiply(reshape(a, sa, s), reshape(b, sb, s), s), out, s);
}

array tensordot(const array& a, const array& b, int axes, SD s) {
  if (axes < 0) throw std::invalid_argument("[tensordot] axis must be greater or equal to 0.");
  if (axes > std::min(a.ndim(), b.ndim())) {
    throw std::invalid_argument("[tensordot] axis must be less than the number of dimensions of a and b.");
  }
  std::vector<int> xa, xb;
  for (int i = 0; i < axes; ++i) {
    xa.push_back(a.ndim() - axes + i);
    xb.push_back(i);
  }
  return tensordot(a, b, xa, xb, s);
}

array tensordot(const array& a, const array& b, const std::vector<int>& axes_a, const std::vector<int>& axes_b,
                SD s) {
  if (axes_a.size() != axes_b.size()) throw std::invalid_argument("[tensordot] axes must have the same size.");
  std::vector<bool> summed_a(a.ndim(), false), summed_b(b.ndim(), false);
  std::vector<int> xa, xb;
  int64_t k = 1;
  for (size_t i = 0; i < axes_a.size(); ++i) {
    const int ia = normalize_axis(axes_a[i], a.ndim(), "tensordot");
    const int ib = normalize_axis(axes_b[i], b.ndim(), "tensordot");
    if (a.shape(ia) != b.shape(ib)) {
      throw std::invalid_argument("[tensordot] a and b must have the same shape on the contracted axes.");
    }
    summed_a[ia] = summed_b[ib] = true;
    xa.push_back(ia);
    xb.push_back(ib);
    k *= a.shape(ia);
  }
  // a -> (free_a, K), b -> (K, free_b), one matmul, then the free shapes back.
  std::vector<int> pa, pb;
  Shape out;
  int64_t fa = 1, fb = 1;
  for (int i = 0; i < a.ndim(); ++i)
    if (!summed_a[i]) {
      pa.push_back(i);
      out.push_back(a.shape(i));
      fa *= a.shape(i);
    }
  pa.insert(pa.end(), xa.begin(), xa.end());
  pb = xb;
  for (int i = 0; i < b.ndim(); ++i)
    if (!summed_b[i]) {
      pb.push_back(i);
      out.push_back(b.shape(i));
      fb *= b.shape(i);
    }
  array ma = reshape(transpose(a, pa, s), {static_cast<ShapeElem>(fa), static_cast<ShapeElem>(k)}, s);
  array mb = reshape(transpose(b, pb, s), {static_cast<ShapeElem>(k), static_cast<ShapeElem>(fb)}, s);
  return reshape(inexact_matmul(ma, mb, s), out, s);
}

array addmm(const array& c, const array& a, const array& b, float alpha, float beta, SD s) {
  // Vectors become matrices for the product, (1, K) and (K, 1); those unit
  // axes are dropped from the result.
  const bool a_vec = a.ndim() == 1, b_vec = b.ndim() == 1;
  array x = a_vec ? reshape(a, {1, a.shape(0)}, s) : a;
  array y = b_vec ? reshape(b, {b.shape(0), 1}, s) : b;
  if (x.ndim() < 2 || y.ndim() < 2) throw std::invalid_argument("[addmm] Got 0 dimension input. Inputs must have at least one dimension.");
  if (x.shape(-1) != y.shape(-2)) {
    throw std::invalid_argument("[addmm] Last dimension of first input with shape " + shape_to_string(x.shape()) +
                                " must match second to last dimension of second input with shape " +
                                shape_to_string(y.shape()) + ".");
  }
  const Dtype t = promote_types(c.dtype(), promote_types(a.dtype(), b.dtype()));
  if (!is_inexact(t)) {  // complex too, as MLX
    throw std::invalid_argument(std::string("[addmm] Only floating point types are supported but ") +
                                dtype_name(c.dtype()) + ", " + dtype_name(a.dtype()) + " and " +
                                dtype_name(b.dtype()) + " were provided which results in " + dtype_name(t) +
                                ", which is not a floating point type.");
  }
  Shape batch = broadcast_shapes(Shape(x.shape().begin(), x.shape().end() - 2),
                                 Shape(y.shape().begin(), y.shape().end() - 2));
  Shape out = batch;
  out.push_back(x.shape(-2));
  out.push_back(y.shape(-1));
  if (broadcast_shapes(c.shape(), out) != out) {
    throw std::invalid_argument("[addmm] input c must broadcast to the output shape");
  }
  array r = matmul(astype(x, t, s), astype(y, t, s), s);
  if (alpha != 1.0f) r = multiply(r, array(alpha, t), s);
  array cc = astype(c, t, s);
  if (beta != 1.0f) cc = multiply(cc, array(beta, t), s);
  r = add(r, cc, s);
  if (a_vec) r = squeeze(r, {-2}, s);
  if (b_vec) r = squeeze(r, {-1}, s);
  return r;
}

array vecdot(const array& a, const array& b, int axis, SD s) {
  if (a.ndim() == 0 || b.ndim() == 0) throw std::invalid_argument("[vecdot] inputs must be at least 1D.");
  const int ax = axis < 0 ? axis + a.ndim() : axis;
  if (ax < 0 || ax >= a.ndim()) throw std::out_of_range("[vecdot] axis is out of bounds.");
  // MLX normalises the axis for each input and requires the same position.
  if (ax != (axis < 0 ? axis + b.ndim() : axis)) throw std::invalid_argument("[vecdot] axis is out of bounds.");
  if (a.shape(ax) != b.shape(ax)) throw std::invalid_argument("[vecdot] a and b must have the same size along axis.");
  array x = is_complex(a.dtype()) ? conjugate(a, s) : a;
  return sum(multiply(x, b, s), {ax}, false, s);
}

}  // namespace alloy
