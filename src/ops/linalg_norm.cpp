// linalg::norm (also mx.matrix_norm) and random::multivariate_normal:
// composites over reductions and the SVD primitive.
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "alloy/linalg.h"
#include "alloy/ops.h"
#include "alloy/random.h"
#include "ops/linalg_checks.h"
#include "ops/op_utils.h"

namespace alloy::linalg {

namespace {

constexpr const char* kOp = "linalg::norm";

std::string ord_text(double p) {
  std::ostringstream o;
  o << p;
  return o.str();
}

// sqrt(sum |x|^2) over axes.
array two_norm(const array& x, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {
  array mag2 = is_complex(x.dtype()) ? square(abs(x, s), s) : square(x, s);
  return sqrt(sum(mag2, axes, keepdims, s), s);
}

array vector_norm_abs(const array& x, double p, const std::vector<int>& ax, bool keepdims, StreamOrDevice s);

// MLX gives complex inputs' 1/inf/0/p norms back as complex64 (the value in
// the real part); only the 2-norm family is real. Matched here.
array like_mlx(const array& out, const array& x, StreamOrDevice s) {
  return is_complex(x.dtype()) ? astype(out, x.dtype(), s) : out;
}

array vector_norm(const array& x, double p, int axis, bool keepdims, StreamOrDevice s) {
  const std::vector<int> ax{axis};
  if (p == 2.0) return two_norm(x, ax, keepdims, s);
  return like_mlx(vector_norm_abs(x, p, ax, keepdims, s), x, s);
}

array vector_norm_abs(const array& x, double p, const std::vector<int>& ax, bool keepdims, StreamOrDevice s) {
  array mag = abs(x, s);
  if (std::isinf(p)) return p > 0 ? max(mag, ax, keepdims, s) : min(mag, ax, keepdims, s);
  if (p == 0.0) return astype(sum(not_equal(x, zeros_like(x, s), s), ax, keepdims, s), mag.dtype(), s);
  if (p == 1.0) return sum(mag, ax, keepdims, s);
  array pp(p, mag.dtype());
  return power(sum(power(mag, pp, s), ax, keepdims, s), reciprocal(pp, s), s);
}

// Singular values of the matrices on axes (r, c), reduced by `pick` (max/min/sum);
// keepdims puts size-1 axes back at r and c.
template <typename F>
array singular_norm(const array& x, int r, int c, bool keepdims, F pick, StreamOrDevice s) {
  // (..., rows, cols) with the matrix axes last.
  array m = moveaxis(moveaxis(x, r, -1, s), c > r ? c - 1 : c, -1, s);
  array sv = svd(m, false, s)[0];
  array out = pick(sv, std::vector<int>{-1}, false, s);
  if (keepdims) out = expand_dims(out, std::vector<int>{std::min(r, c), std::max(r, c)}, s);
  return out;
}

array matrix_norm(const array& x, const NormOrder& ord, int r, int c, bool keepdims, StreamOrDevice s) {
  auto sum_f = [](const array& a, const std::vector<int>& ax, bool k, StreamOrDevice st) { return sum(a, ax, k, st); };
  auto max_f = [](const array& a, const std::vector<int>& ax, bool k, StreamOrDevice st) { return max(a, ax, k, st); };
  auto min_f = [](const array& a, const std::vector<int>& ax, bool k, StreamOrDevice st) { return min(a, ax, k, st); };
  if (std::holds_alternative<std::monostate>(ord)) return two_norm(x, {r, c}, keepdims, s);
  if (auto* name = std::get_if<std::string>(&ord)) {
    if (*name == "fro") return two_norm(x, {r, c}, keepdims, s);
    if (*name == "nuc") return singular_norm(x, r, c, keepdims, sum_f, s);
    throw std::invalid_argument("[linalg::norm] Invalid ord value '" + *name + "' for matrix norm.");
  }
  const double p = std::get<double>(ord);
  if (p == 2.0) return singular_norm(x, r, c, keepdims, max_f, s);
  if (p == -2.0) return singular_norm(x, r, c, keepdims, min_f, s);
  // 1/-1: column sums (over rows r) then max/min over c; inf/-inf the other way round.
  int inner, outer;
  if (std::abs(p) == 1.0) {
    inner = r, outer = c;
  } else if (std::isinf(p)) {
    inner = c, outer = r;
  } else {
    throw std::invalid_argument("[linalg::norm] Invalid ord " + ord_text(p) + " for matrix norm.");
  }
  array sums = sum(abs(x, s), {inner}, true, s);
  array out = p > 0 ? max(sums, {outer}, true, s) : min(sums, {outer}, true, s);
  return like_mlx(keepdims ? out : squeeze(out, {std::min(r, c), std::max(r, c)}, s), x, s);
}

}  // namespace

array norm(const array& a_in, const NormOrder& ord, const std::optional<std::vector<int>>& axis, bool keepdims,
           StreamOrDevice s) {
  // Integers and bool are measured in float32 (as MLX); complex gives real norms.
  array a = is_inexact(a_in.dtype()) ? a_in : astype(a_in, float32, s);
  const bool has_ord = !std::holds_alternative<std::monostate>(ord);
  std::vector<int> axes;
  if (axis) {
    axes = *axis;
  } else {
    if (!has_ord) {  // the 2-norm of everything, whatever the rank
      std::vector<int> all(a.ndim());
      for (int i = 0; i < a.ndim(); ++i) all[i] = i;
      return two_norm(a, all, keepdims, s);
    }
    if (a.ndim() != 1 && a.ndim() != 2) throw std::invalid_argument("[linalg::norm] Received too many axes for norm.");
    for (int i = 0; i < a.ndim(); ++i) axes.push_back(i);
  }
  if (axes.size() > 2) throw std::invalid_argument("[linalg::norm] Received too many axes for norm.");
  for (int& ax : axes) ax = normalize_axis(ax, a.ndim(), kOp);
  if (axes.size() == 2 && axes[0] == axes[1]) {
    throw std::invalid_argument("[linalg::norm] Duplicate axes detected in reduction.");
  }
  if (axes.size() == 1) {
    if (auto* name = std::get_if<std::string>(&ord)) {
      throw std::invalid_argument("[linalg::norm] Norm '" + *name +
                                  "' only supported for matrices, but received 1 axis/axes.");
    }
    const double p = has_ord ? std::get<double>(ord) : 2.0;
    return vector_norm(a, p, axes[0], keepdims, s);
  }
  if (axes.empty()) throw std::invalid_argument("[linalg::norm] Received no axes for norm.");
  return matrix_norm(a, ord, axes[0], axes[1], keepdims, s);
}

}  // namespace alloy::linalg

namespace alloy::random {

array multivariate_normal(const array& mean, const array& cov, const Shape& shape, Dtype dtype,
                          const std::optional<array>& key, StreamOrDevice s) {
  if (dtype != float32) throw std::invalid_argument("[multivariate_normal] dtype must be float32.");
  if (mean.ndim() < 1) throw std::invalid_argument("[multivariate_normal] mean must have at least one dimension.");
  if (cov.ndim() < 2) throw std::invalid_argument("[multivariate_normal] cov must have at least two dimensions.");
  const ShapeElem n = mean.shape(-1);
  if (cov.shape(-1) != n || cov.shape(-2) != n) {
    throw std::invalid_argument("[multivariate_normal] mean and cov must have compatible shapes.");
  }
  // Sample batch: shape (when given) broadcast with the batches of mean and cov.
  Shape mb(mean.shape().begin(), mean.shape().end() - 1), cb(cov.shape().begin(), cov.shape().end() - 2);
  Shape batch = broadcast_shapes(broadcast_shapes(shape, mb), cb);
  Shape zshape = batch;
  zshape.push_back(n);
  array z = normal(zshape, float32, std::nullopt, std::nullopt, key, s);
  // cov = U diag(S) Vt; its square root U diag(sqrt S) Vt is the same for
  // any sign choice of the singular vectors (MLX uses this one too).
  array c = astype(cov, float32, s);
  auto usv = linalg::svd(c, true, s);
  array root = matmul(multiply(usv[0], expand_dims(sqrt(usv[1], s), -2, s), s), usv[2], s);
  array y = squeeze(matmul(expand_dims(z, -2, s), root, s), {-2}, s);
  return add(astype(mean, float32, s), y, s);
}

}  // namespace alloy::random
