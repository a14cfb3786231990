// Scan: derivatives (built from ops only).
//
// Positions are counted in scan order ("before" = earlier in the scan, so
// later indices when reversed). An exclusive scan is the inclusive one
// shifted one step along the scan with the identity in front, so cumprod,
// cummax and cummin differentiate the inclusive scan and shift the tangents
// (jvp) or unshift the cotangents (vjp); cumsum and logcumsumexp have
// direct rules.
#include "primitives/scan.h"

#include "ops/op_utils.h"

#include <cmath>
#include <stdexcept>

#include "alloy/ops.h"
#include "alloy/ops_math.h"

namespace alloy {

bool Scan::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Scan*>(&other);
  return o && o->op_ == op_ && o->axis_ == axis_ && o->reverse_ == reverse_ && o->inclusive_ == inclusive_;
}

namespace {

// out[j] = a[j - 1] along `axis` with 0 at j = 0 (toward_end), or
// out[j] = a[j + 1] with 0 at the last position.
array shift_along(const array& a, int axis, bool toward_end, Stream s) {
  const ShapeElem n = a.shape(axis);
  if (n == 0) return a;
  Shape start(a.ndim(), 0), stop = a.shape(), step(a.ndim(), 1);
  std::vector<std::pair<int, int>> width(a.ndim(), {0, 0});
  if (toward_end) {
    stop[axis] = n - 1;
    width[axis] = {1, 0};
  } else {
    start[axis] = 1;
    width[axis] = {0, 1};
  }
  return pad(slice(a, start, stop, step, s), width, array(0.0, a.dtype()), "constant", s);
}

// Scan-order shifts: tangents of an exclusive scan from the inclusive ones,
// and cotangents of the inclusive scan from the exclusive ones.
array exclusive_from_inclusive(const array& t, int axis, bool reverse, Stream s) {
  return shift_along(t, axis, !reverse, s);
}
array inclusive_from_exclusive(const array& g, int axis, bool reverse, Stream s) {
  return shift_along(g, axis, reverse, s);
}

// Inclusive cumprod, zero-aware. Per position: `before` = no zero up to and
// including it in scan order, `first` = it is the first zero; `with_one` =
// the cumprod with that first zero replaced by 1.
struct ProdZeros {
  array zeros_so_far;  // int32: zeros up to and including each position
  array before;
  array first;
  array with_one;
};

ProdZeros prod_zeros(const array& x, int axis, bool reverse, Stream s) {
  array is_zero = equal(x, array(0.0, x.dtype()), s);
  array so_far = cumsum(astype(is_zero, Dtype::int32, s), axis, reverse, true, s);
  array before = equal(so_far, array(0, Dtype::int32), s);
  array first = logical_and(is_zero, equal(so_far, array(1, Dtype::int32), s), s);
  array with_one = cumprod(where(first, array(1.0, x.dtype()), x, s), axis, reverse, true, s);
  return {so_far, before, first, with_one};
}

// d y_j / d x_i = prod_{m <= j, m != i} x_m. Before the first zero z this
// is y_j / x_i (x_i != 0, and y_j = 0 once z is in the product, as the true
// partial); at z it is the cumprod with x_z = 1; after z every product
// holds x_z = 0. So no division ever sees a zero. (As MLX's rule, the 0
// taken after z is a constant: a second derivative at an exact zero misses
// the terms that differentiate that factor x_z.)
array cumprod_vjp(const array& x, const array& y, const array& g, int axis, bool reverse, Stream s) {
  ProdZeros z = prod_zeros(x, axis, reverse, s);
  array one(1.0, x.dtype()), zero(0.0, x.dtype());
  array x_safe = where(z.before, x, one, s);
  array g_before = divide(cumsum(multiply(g, y, s), axis, !reverse, true, s), x_safe, s);
  array g_first = cumsum(multiply(g, z.with_one, s), axis, !reverse, true, s);
  return where(z.before, g_before, where(z.first, g_first, zero, s), s);
}

// t_out_j = sum_{i <= j} t_i prod_{m <= j, m != i} x_m: y_j sum t_i / x_i
// with no zero up to j; t_z times the cumprod with x_z = 1 with exactly one
// (at z); 0 with two or more.
array cumprod_jvp(const array& x, const array& y, const array& t, int axis, bool reverse, Stream s) {
  ProdZeros z = prod_zeros(x, axis, reverse, s);
  array one(1.0, x.dtype()), zero(0.0, t.dtype());
  array x_safe = where(equal(x, array(0.0, x.dtype()), s), one, x, s);
  array no_zero = multiply(y, cumsum(divide(t, x_safe, s), axis, reverse, true, s), s);
  array t_first = cumsum(where(z.first, t, zero, s), axis, reverse, true, s);
  array one_zero = multiply(t_first, z.with_one, s);
  array one_zero_so_far = equal(z.zeros_so_far, array(1, Dtype::int32), s);
  return where(z.before, no_zero, where(one_zero_so_far, one_zero, zero, s), s);
}

// Inclusive cummax/cummin: for each position, the index along `axis` of the
// input that supplies the running extreme y_j. Among equal candidates the
// latest in scan order wins (MLX's rule): the largest index <= j forward,
// the smallest index >= j reversed. Positions with no owner (only possible
// with nan) get index n, which is outside the axis.
array extreme_owner(const array& x, const array& y, int axis, bool reverse, Stream s) {
  const ShapeElem n = x.shape(axis);
  Shape line(x.ndim(), 1);
  line[axis] = n;
  array iota = reshape(arange(0, n, 1, Dtype::int32, s), line, s);
  // x_i == y_i marks a (possibly tied) new record; the owner of y_j is the
  // latest record so far, whose value y_j still is.
  array none(reverse ? static_cast<int>(n) : -1, Dtype::int32);
  array records = where(equal(x, y, s), iota, none, s);
  array owner = reverse ? cummin(records, axis, true, true, s) : cummax(records, axis, false, true, s);
  return where(less(owner, array(0, Dtype::int32), s), array(static_cast<int>(n), Dtype::int32), owner, s);
}

// Cotangents summed into their owners (repeated owners accumulate; index n
// is dropped by the scatter).
array extreme_vjp(const array& x, const array& owner, const array& g, int axis, Stream s) {
  return scatter_add_along_axis(zeros_like(x, s), owner, g, axis, s);
}

// Each output takes its owner's tangent (0 where it has none).
array extreme_jvp(const array& owner, const array& t, int axis, Stream s) {
  const int n = static_cast<int>(t.shape(axis));
  array taken = take_along_axis(t, minimum(owner, array(n - 1, Dtype::int32), s), axis, s);
  return where(less(owner, array(n, Dtype::int32), s), taken, array(0.0, t.dtype()), s);
}

// logcumsumexp: y_i = log sum_{j in R(i)} exp(x_j), so dy_i/dx_j =
// exp(x_j - y_i). Both derivatives are sums sum_k w_k exp(b_k) over a scan
// range with weights w of either sign: the positive and the negative weights
// run as two log-domain scans (log w_k + b_k), so no exp overflows, and the
// two come back as exp(l + shift). An empty range (l = -inf) contributes 0,
// also where shift is infinite.
array signed_exp_scan(const array& w, const array& b, const array& shift, int axis, bool reverse, bool inclusive,
                      Stream s) {
  array neg_inf(-INFINITY, w.dtype()), zero(0.0, w.dtype());
  array log_w = add(log(abs(w, s), s), b, s);
  auto part = [&](const array& mask) {
    array l = logcumsumexp(where(mask, log_w, neg_inf, s), axis, reverse, inclusive, s);
    return where(equal(l, neg_inf, s), zero, exp(add(l, shift, s), s), s);
  };
  return subtract(part(greater(w, zero, s)), part(less(w, zero, s)), s);
}

// d x_j = sum_{i : j in R(i)} g_i exp(x_j - y_i): the scan the other way.
array logcumsumexp_vjp(const array& x, const array& y, const array& g, int axis, bool reverse, bool inclusive,
                       Stream s) {
  return signed_exp_scan(g, negative(y, s), x, axis, !reverse, inclusive, s);
}

// d y_i = sum_{j in R(i)} t_j exp(x_j - y_i).
array logcumsumexp_jvp(const array& x, const array& y, const array& t, int axis, bool reverse, bool inclusive,
                       Stream s) {
  return signed_exp_scan(t, x, negative(y, s), axis, reverse, inclusive, s);
}

}  // namespace

std::vector<array> Scan::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                             const std::vector<int>&, const std::vector<array>& outputs) {
  const Stream s = stream();
  const array& x = primals[0];
  // Each input feeds the outputs after it (before it when reversed): the
  // cotangents summed the other way.
  if (op_ == ScanOp::Sum) return {cumsum(cotangents[0], axis_, !reverse_, inclusive_, s)};
  if (x.size() == 0) return {zeros_like(x, s)};
  if (op_ == ScanOp::LogAddExp) return {logcumsumexp_vjp(x, outputs[0], cotangents[0], axis_, reverse_, inclusive_, s)};
  array y = inclusive_ ? outputs[0]
                       : array(x.shape(), x.dtype(), std::make_shared<Scan>(s, op_, axis_, reverse_, true), {x});
  array g = inclusive_ ? cotangents[0] : inclusive_from_exclusive(cotangents[0], axis_, reverse_, s);
  switch (op_) {
    case ScanOp::Prod: return {cumprod_vjp(x, y, g, axis_, reverse_, s)};
    case ScanOp::Max:
    case ScanOp::Min: return {extreme_vjp(x, extreme_owner(x, y, axis_, reverse_, s), g, axis_, s)};
    default: throw std::invalid_argument(std::string("[") + name() + "] has no vjp.");
  }
}

std::vector<array> Scan::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                             const std::vector<int>&) {
  const Stream s = stream();
  const array& x = primals[0];
  const array& t = tangents[0];
  if (op_ == ScanOp::Sum) return {cumsum(t, axis_, reverse_, inclusive_, s)};
  if (x.size() == 0) return {zeros_like(t, s)};
  if (op_ == ScanOp::LogAddExp) {
    array y(x.shape(), x.dtype(), std::make_shared<Scan>(s, op_, axis_, reverse_, inclusive_), {x});
    return {logcumsumexp_jvp(x, y, t, axis_, reverse_, inclusive_, s)};
  }
  array y(x.shape(), x.dtype(), std::make_shared<Scan>(s, op_, axis_, reverse_, true), {x});
  array out = [&] {
    switch (op_) {
      case ScanOp::Prod: return cumprod_jvp(x, y, t, axis_, reverse_, s);
      case ScanOp::Max:
      case ScanOp::Min: return extreme_jvp(extreme_owner(x, y, axis_, reverse_, s), t, axis_, s);
      default: throw std::invalid_argument(std::string("[") + name() + "] has no jvp.");
    }
  }();
  return {inclusive_ ? out : exclusive_from_inclusive(out, axis_, reverse_, s)};
}

}  // namespace alloy
