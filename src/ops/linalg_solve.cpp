// mx.linalg ops built from other ops: cholesky_inv, solve, solve_triangular,
// det, slogdet, pinv, cross. They run on either device and differentiate
// wherever their parts do.
#include <algorithm>
#include <cmath>
#include <limits>

#include "alloy/linalg.h"
#include "alloy/ops.h"
#include "alloy/ops_shape.h"
#include "ops/linalg_checks.h"
#include "ops/op_utils.h"

namespace alloy::linalg {

using namespace linalg_detail;

namespace {

// Elements [start, start + len) along `axis` (negative axes count from the end).
array take_range(const array& a, int axis, ShapeElem start, ShapeElem len, StreamOrDevice s) {
  if (axis < 0) axis += a.ndim();
  Shape lo(a.ndim(), 0), hi = a.shape(), step(a.ndim(), 1);
  lo[axis] = start;
  hi[axis] = start + len;
  return slice(a, lo, hi, step, s);
}

// a[..., i, j] as an array of the batch shape.
array entry(const array& a, int i, int j, StreamOrDevice s) {
  return squeeze(take_range(take_range(a, -2, i, 1, s), -1, j, 1, s), {-2, -1}, s);
}

// The dtype both operands of solve/solve_triangular are cast to.
Dtype solve_dtype(const array& a, const array& b, const char* op) {
  const Dtype d = promote_types(a.dtype(), b.dtype());
  if (d != float32 && d != float64) {
    throw std::invalid_argument(std::string("[") + op +
                                "] Input arrays must promote to float32 or float64.  Received arrays with type " +
                                dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()) + ".");
  }
  return d;
}

void check_rhs(const array& a, const array& b, const char* op) {
  check_ndim(a, op);
  if (a.shape(-1) != a.shape(-2)) {
    throw std::invalid_argument(std::string("[") + op +
                                "] First input must be a square matrix. Received array with shape " +
                                shape_to_string(a.shape()) + ".");
  }
  if (b.ndim() < 1) {
    throw std::invalid_argument(std::string("[") + op +
                                "] Second input must have >= 1 dimensions. Received array with " +
                                std::to_string(b.ndim()) + " dimensions.");
  }
  const ShapeElem rows = b.ndim() == 1 ? b.shape(0) : b.shape(-2);
  if (a.shape(-1) != rows) {
    throw std::invalid_argument(
        std::string("[") + op + "] Last dimension of first input with shape " + shape_to_string(a.shape()) +
        " must match second to last dimension of second input with shape " + shape_to_string(b.shape()) + ".");
  }
}

// Determinants of 0x0 to 3x3 matrices by cofactor expansion: differentiable
// and valid in every float dtype (MLX also takes this path for n <= 3).
array small_det(const array& a, StreamOrDevice s) {
  const int n = static_cast<int>(a.shape(-1));
  Shape batch(a.shape().begin(), a.shape().end() - 2);
  if (n == 0) return ones(batch, a.dtype(), s);
  auto e = [&](int i, int j) { return entry(a, i, j, s); };
  if (n == 1) return e(0, 0);
  if (n == 2) return subtract(multiply(e(0, 0), e(1, 1), s), multiply(e(0, 1), e(1, 0), s), s);
  auto minor = [&](int r1, int c1, int r2, int c2) {
    return subtract(multiply(e(r1, c1), e(r2, c2), s), multiply(e(r1, c2), e(r2, c1), s), s);
  };
  array t0 = multiply(e(0, 0), minor(1, 1, 2, 2), s);
  array t1 = multiply(e(0, 1), minor(1, 0, 2, 2), s);
  array t2 = multiply(e(0, 2), minor(1, 0, 2, 1), s);
  return add(subtract(t0, t1, s), t2, s);
}

// Pieces of det/slogdet for n >= 4 from the LU factorization: the diagonal of
// U and the permutation's sign (+1/-1, in the matrix dtype).
std::pair<array, array> lu_diag_and_sign(const array& a, StreamOrDevice s) {
  auto [lu_mat, pivots] = lu_factor(a, s);
  array d = diagonal(lu_mat, 0, -2, -1, s);
  const int k = static_cast<int>(pivots.shape(-1));
  array swaps = sum(not_equal(pivots, arange(0, k, 1, uint32, s), s), {-1}, false, s);
  array odd = equal(remainder(swaps, array(2, swaps.dtype()), s), array(1, swaps.dtype()), s);
  array sign = where(odd, array(-1.0, a.dtype()), array(1.0, a.dtype()), s);
  return {d, sign};
}

// det/slogdet input: integers become float32 (as MLX); complex is refused.
array det_input(const array& a, const char* op) {
  check_ndim(a, op);
  check_square(a, op, "Only defined for square matrices.");
  if (is_complex(a.dtype())) throw std::invalid_argument(std::string("[") + op + "] Complex inputs are not supported.");
  return is_floating(a.dtype()) ? a : astype(a, float32);
}

}  // namespace

array cholesky_inv(const array& l, bool upper, StreamOrDevice s) {
  check_matrix(l, "linalg::cholesky_inv", false, "Cholesky inverse is only defined for square matrices.");
  // A = L L^T gives A^-1 = L^-T L^-1; A = U^T U gives U^-1 U^-T.
  array li = tri_inv(l, upper, s);
  array lt = swapaxes(li, -1, -2, s);
  return upper ? matmul(li, lt, s) : matmul(lt, li, s);
}

array solve(const array& a, const array& b, StreamOrDevice s) {
  const Dtype d = solve_dtype(a, b, "linalg::solve");
  check_rhs(a, b, "linalg::solve");
  // inv (getrf + getri) then a product: batches of b broadcast against a,
  // and the product runs on the GPU's BLAS where the stream is there.
  return matmul(inv(astype(a, d, s), s), astype(b, d, s), s);
}

array solve_triangular(const array& a, const array& b, bool upper, StreamOrDevice s) {
  const Dtype d = solve_dtype(a, b, "linalg::solve_triangular");
  check_rhs(a, b, "linalg::solve_triangular");
  return matmul(tri_inv(astype(a, d, s), upper, s), astype(b, d, s), s);
}

array det(const array& a_in, StreamOrDevice s) {
  array a = det_input(a_in, "linalg::det");
  if (a.shape(-1) <= 3) return small_det(a, s);
  auto [d, sign] = lu_diag_and_sign(a, s);
  return multiply(prod(d, {-1}, false, s), sign, s);
}

std::pair<array, array> slogdet(const array& a_in, StreamOrDevice s) {
  array a = det_input(a_in, "linalg::slogdet");
  if (a.shape(-1) <= 3) {
    array dt = small_det(a, s);
    return {sign(dt, s), log(abs(dt, s), s)};
  }
  auto [d, sign_p] = lu_diag_and_sign(a, s);
  // A zero pivot makes the sign 0 and the log -inf (as MLX and numpy).
  return {multiply(prod(sign(d, s), {-1}, false, s), sign_p, s), sum(log(abs(d, s), s), {-1}, false, s)};
}

array pinv(const array& a, StreamOrDevice s) {
  check_matrix(a, "linalg::pinv", false, nullptr);
  const ShapeElem m = a.shape(-2), n = a.shape(-1), k = std::min(m, n);
  Shape out_shape = a.shape();
  std::swap(out_shape[a.ndim() - 1], out_shape[a.ndim() - 2]);
  if (k == 0) return zeros(out_shape, a.dtype(), s);
  auto usv = svd(a, true, s);
  // Thin factors: U[..., :, :k], Vt[..., :k, :].
  array u = take_range(usv[0], -1, 0, k, s);
  array vt = take_range(usv[2], -2, 0, k, s);
  array sv = usv[1];
  // Singular values below max(m, n) * eps * s_max count as zero (numpy's
  // matrix_rank rule), so rank-deficient inputs stay finite.
  const double eps = a.dtype() == float64 ? std::numeric_limits<double>::epsilon()
                                          : static_cast<double>(std::numeric_limits<float>::epsilon());
  array cutoff = multiply(max(sv, {-1}, true, s), array(static_cast<double>(std::max(m, n)) * eps, a.dtype()), s);
  array keep = greater(sv, cutoff, s);
  array safe = where(keep, sv, ones_like(sv, s), s);
  array inv_s = where(keep, reciprocal(safe, s), zeros_like(sv, s), s);
  // pinv = V diag(1/s) U^T.
  array v_scaled = multiply(swapaxes(vt, -1, -2, s), expand_dims(inv_s, -2, s), s);
  return matmul(v_scaled, swapaxes(u, -1, -2, s), s);
}

array cross(const array& a_in, const array& b_in, int axis, StreamOrDevice s) {
  const char* op = "linalg::cross";
  // Batch axes broadcast (as MLX); the vector axis is checked after.
  const int nd = std::max(a_in.ndim(), b_in.ndim());
  const int ax = normalize_axis(axis, nd, op);
  // Length-2 vectors are taken as having a zero third component (as MLX).
  auto to3 = [&](const array& x) {
    const ShapeElem len = x.shape(ax);
    if (len == 3) return x;
    if (len != 2) {
      throw std::invalid_argument("[linalg::cross] The specified axis must have size 2 or 3; received shape " +
                                  shape_to_string(x.shape()) + ".");
    }
    std::vector<std::pair<int, int>> widths(x.ndim(), {0, 0});
    widths[ax] = {0, 1};
    return pad(x, widths, array(0, x.dtype()), "constant", s);
  };
  const Dtype d = promote_types(a_in.dtype(), b_in.dtype());
  // Left-pad ranks so `ax` names the same axis in both.
  auto rank_up = [&](const array& x) {
    Shape sh(nd - x.ndim(), 1);
    sh.insert(sh.end(), x.shape().begin(), x.shape().end());
    return reshape(x, sh, s);
  };
  array a = astype(to3(rank_up(a_in)), d, s), b = astype(to3(rank_up(b_in)), d, s);
  auto c = [&](const array& x, int i) { return take_range(x, ax, i, 1, s); };
  array x = subtract(multiply(c(a, 1), c(b, 2), s), multiply(c(a, 2), c(b, 1), s), s);
  array y = subtract(multiply(c(a, 2), c(b, 0), s), multiply(c(a, 0), c(b, 2), s), s);
  array z = subtract(multiply(c(a, 0), c(b, 1), s), multiply(c(a, 1), c(b, 0), s), s);
  return concatenate({x, y, z}, ax, s);
}

}  // namespace alloy::linalg
