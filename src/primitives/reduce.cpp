// Reduce and ArgReduce: dtype rule and derivatives (built from ops only).
#include "primitives/reduce.h"

#include <algorithm>
#include <numeric>

#include "alloy/ops.h"

namespace alloy {

Dtype reduce_out_dtype(ReduceOp op, Dtype in) {
  return dispatch_reduce_op(op, [&](auto op_c) {
    constexpr ReduceOp Op = decltype(op_c)::value;
    return dispatch_dtype(in, [&](auto tag) {
      using T = typename decltype(tag)::type;
      return dtype_of<reduce_out_t<Op, T>>;
    });
  });
}

bool Reduce::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Reduce*>(&other);
  return o && o->op_ == op_ && o->axes_ == axes_ && o->keepdims_ == keepdims_;
}

bool ArgReduce::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const ArgReduce*>(&other);
  return o && o->op_ == op_ && o->axis_ == axis_ && o->keepdims_ == keepdims_;
}

namespace {

Shape kept_shape(const Shape& in, const std::vector<int>& axes) {
  Shape s = in;
  for (int ax : axes) s[ax] = 1;
  return s;
}

// An output-shaped array spread back over the input shape.
array expand(const array& r, const array& x, const std::vector<int>& axes, Stream s) {
  return broadcast_to(reshape(r, kept_shape(x.shape(), axes), s), x.shape(), s);
}

// Product of all other elements of each reduced group: exclusive products
// from both sides along one axis (correct with zeros, no division). Several
// axes are first moved last and flattened into one.
array prod_others(const array& x, const std::vector<int>& axes, Stream s) {
  if (axes.size() == 1) {
    int ax = axes[0];
    return multiply(cumprod(x, ax, false, false, s), cumprod(x, ax, true, false, s), s);
  }
  std::vector<int> perm;
  for (int d = 0; d < x.ndim(); ++d) {
    if (!std::binary_search(axes.begin(), axes.end(), d)) perm.push_back(d);
  }
  perm.insert(perm.end(), axes.begin(), axes.end());
  array moved = transpose(x, perm, s);
  Shape flat(moved.shape().begin(), moved.shape().end() - axes.size());
  flat.push_back(-1);
  array f = reshape(moved, flat, s);
  int last = f.ndim() - 1;
  array others = multiply(cumprod(f, last, false, false, s), cumprod(f, last, true, false, s), s);
  others = reshape(others, moved.shape(), s);
  std::vector<int> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int>(i);
  return transpose(others, inverse, s);
}

// d out / d x, as an input-shaped array (for sum this is all ones).
array reduce_partial(ReduceOp op, const array& x, const array& out, const std::vector<int>& axes, Stream s) {
  switch (op) {
    case ReduceOp::Prod: return prod_others(x, axes, s);
    case ReduceOp::Max:
    case ReduceOp::Min: {
      // Ties share the cotangent equally, as MLX.
      array mask = equal(x, expand(out, x, axes, s), s);
      array count = sum(mask, axes, true, s);
      return divide(mask, broadcast_to(count, x.shape(), s), s);
    }
    default: return ones_like(x, s);
  }
}

}  // namespace

std::vector<array> Reduce::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                               const std::vector<int>&, const std::vector<array>& outputs) {
  const array& x = primals[0];
  if (op_ == ReduceOp::And || op_ == ReduceOp::Or) return {zeros_like(x, stream())};
  array g = expand(cotangents[0], x, axes_, stream());
  if (op_ == ReduceOp::Sum) return {g};
  array partial = astype(reduce_partial(op_, x, outputs[0], axes_, stream()), g.dtype(), stream());
  // Complex products: the conjugate partial, MLX's convention.
  if (op_ == ReduceOp::Prod) partial = conjugate(partial, stream());
  return {multiply(g, partial, stream())};
}

std::vector<array> Reduce::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                               const std::vector<int>&) {
  const array& x = primals[0];
  const array& t = tangents[0];
  Shape out_shape;
  for (int d = 0; d < x.ndim(); ++d) {
    bool red = std::binary_search(axes_.begin(), axes_.end(), d);
    if (!red) out_shape.push_back(x.shape()[d]);
    else if (keepdims_) out_shape.push_back(1);
  }
  if (op_ == ReduceOp::And || op_ == ReduceOp::Or) return {zeros(out_shape, Dtype::bool_, stream())};
  if (op_ == ReduceOp::Sum) return {sum(t, axes_, keepdims_, stream())};
  array out(out_shape, reduce_out_dtype(op_, x.dtype()), std::make_shared<Reduce>(stream(), op_, axes_, keepdims_), {x});
  array dx = astype(reduce_partial(op_, x, out, axes_, stream()), t.dtype(), stream());
  return {sum(multiply(t, dx, stream()), axes_, keepdims_, stream())};
}

// Indices are piecewise constant: zero derivatives (as MLX).
std::vector<array> ArgReduce::vjp(const std::vector<array>& primals, const std::vector<array>&,
                                  const std::vector<int>&, const std::vector<array>&) {
  return {zeros_like(primals[0], stream())};
}

std::vector<array> ArgReduce::jvp(const std::vector<array>& primals, const std::vector<array>&,
                                  const std::vector<int>&) {
  Shape out_shape = primals[0].shape();
  if (keepdims_) out_shape[axis_] = 1;
  else out_shape.erase(out_shape.begin() + axis_);
  return {zeros(out_shape, Dtype::uint32, stream())};
}

bool Variance::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Variance*>(&other);
  return o && o->axis_ == axis_ && o->ddof_ == ddof_;
}

double Variance::divisor(const array& input) const {
  return std::max(static_cast<double>(input.shape(axis_)) - ddof_, 0.0);
}

namespace {
// 2 (x - mean) / divisor: the derivative of the variance along `axis`.
array variance_slope(const array& x, int axis, double divisor, Stream s) {
  array centred = subtract(x, mean(x, {axis}, true, s), s);
  return multiply(centred, array(2.0 / divisor, x.dtype()), s);
}
}  // namespace

std::vector<array> Variance::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                 const std::vector<int>&, const std::vector<array>&) {
  const array& x = primals[0];
  return {multiply(cotangents[0], variance_slope(x, axis_, divisor(x), stream()), stream())};
}

std::vector<array> Variance::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                                 const std::vector<int>&) {
  const array& x = primals[0];
  return {sum(multiply(tangents[0], variance_slope(x, axis_, divisor(x), stream()), stream()), {axis_}, true,
              stream())};
}

}  // namespace alloy
