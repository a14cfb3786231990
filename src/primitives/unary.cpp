// Unary: dtype rule and derivatives (built from ops only).
#include "primitives/unary.h"

#include <cmath>
#include <optional>

#include "alloy/ops.h"

namespace alloy {

Dtype unary_out_dtype(UnaryOp op, Dtype in) {
  switch (unary_info(op).result) {
    case UnaryResult::Bool: return Dtype::bool_;
    case UnaryResult::RealPart: return in == Dtype::complex64 ? Dtype::float32 : in;
    case UnaryResult::Same: return in;
  }
  return in;
}

bool Unary::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Unary*>(&other);
  return o && o->op_ == op_;
}

namespace {

// d y / d x for y = op(x) as an array of x's shape, or nullopt where the
// derivative is zero (steps, predicates, integer-valued functions).
std::optional<array> derivative(UnaryOp op, const array& x, const array& y, Stream s) {
  const Dtype d = x.dtype();
  auto c = [d](double v) { return array(v, d); };
  switch (op) {
    case UnaryOp::Abs: return sign(x, s);
    case UnaryOp::Negative: return c(-1.0);
    case UnaryOp::Exp: return y;
    case UnaryOp::Expm1: return add(y, c(1.0), s);
    case UnaryOp::Log: return reciprocal(x, s);
    case UnaryOp::Log1p: return reciprocal(add(x, c(1.0), s), s);
    case UnaryOp::Log2: return reciprocal(multiply(x, c(std::log(2.0)), s), s);
    case UnaryOp::Log10: return reciprocal(multiply(x, c(std::log(10.0)), s), s);
    case UnaryOp::Sin: return cos(x, s);
    case UnaryOp::Cos: return negative(sin(x, s), s);
    case UnaryOp::Tan: return add(c(1.0), square(y, s), s);
    case UnaryOp::ArcSin: return rsqrt(subtract(c(1.0), square(x, s), s), s);
    case UnaryOp::ArcCos: return negative(rsqrt(subtract(c(1.0), square(x, s), s), s), s);
    case UnaryOp::ArcTan: return reciprocal(add(c(1.0), square(x, s), s), s);
    case UnaryOp::Sinh: return cosh(x, s);
    case UnaryOp::Cosh: return sinh(x, s);
    case UnaryOp::Tanh: return subtract(c(1.0), square(y, s), s);
    case UnaryOp::ArcSinh: return rsqrt(add(square(x, s), c(1.0), s), s);
    case UnaryOp::ArcCosh: return rsqrt(subtract(square(x, s), c(1.0), s), s);
    case UnaryOp::ArcTanh: return reciprocal(subtract(c(1.0), square(x, s), s), s);
    case UnaryOp::Sqrt: return divide(c(0.5), y, s);
    case UnaryOp::Rsqrt: return multiply(c(-0.5), divide(y, x, s), s);
    case UnaryOp::Square: return multiply(c(2.0), x, s);
    case UnaryOp::Sigmoid: return multiply(y, subtract(c(1.0), y, s), s);
    case UnaryOp::Erf: return multiply(c(2.0 / std::sqrt(M_PI)), exp(negative(square(x, s), s), s), s);
    case UnaryOp::ErfInv: return multiply(c(std::sqrt(M_PI) / 2.0), exp(square(y, s), s), s);
    default: return std::nullopt;
  }
}

}  // namespace

std::vector<array> Unary::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                              const std::vector<int>&, const std::vector<array>& outputs) {
  const array& x = primals[0];
  const array& g = cotangents[0];
  switch (op_) {
    case UnaryOp::Real: return {astype(g, x.dtype(), stream())};
    case UnaryOp::Imag: return {multiply(array(complex64_t(0.0f, 1.0f)), astype(g, x.dtype(), stream()), stream())};
    case UnaryOp::Conjugate: return {conjugate(g, stream())};
    default: break;
  }
  auto dy = derivative(op_, x, outputs[0], stream());
  if (!dy) return {zeros_like(x, stream())};
  // Complex inputs of holomorphic functions: the cotangent times the
  // conjugate derivative, MLX's convention (the jvp keeps the derivative
  // itself). |z| is not holomorphic: its cotangent (real) times z / |z|.
  return {multiply(g, op_ == UnaryOp::Abs ? *dy : conjugate(*dy, stream()), stream())};
}

std::vector<array> Unary::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                              const std::vector<int>&) {
  const array& x = primals[0];
  const array& t = tangents[0];
  switch (op_) {
    case UnaryOp::Real: return {real(t, stream())};
    case UnaryOp::Imag: return {imag(t, stream())};
    case UnaryOp::Conjugate: return {conjugate(t, stream())};
    default: break;
  }
  // Ops whose derivative uses the output recompute it (jvp gets no outputs).
  array y(x.shape(), unary_out_dtype(op_, x.dtype()), std::make_shared<Unary>(stream(), op_), {x});
  auto dy = derivative(op_, x, y, stream());
  if (!dy) return {zeros_like(y, stream())};
  return {multiply(t, *dy, stream())};
}

}  // namespace alloy
