// Unary and binary elementwise ops, where and clip: validation, MLX's dtype
// rules and broadcasting; the nodes carry Unary/Binary/Select primitives.
#include <cmath>
#include <stdexcept>
#include <string>

#include "alloy/ops.h"
#include "ops/elementwise_common.h"
#include "ops/op_utils.h"
#include "primitives/binary.h"
#include "primitives/ternary.h"
#include "primitives/unary.h"

namespace alloy {

namespace {

array unary_node(UnaryOp op, const char* name, const array& a, SD s) {
  if (!(unary_info(op).kinds & math::kind_bit(a.dtype()))) {
    throw std::invalid_argument(std::string("[") + name + "] not supported for inputs of dtype " +
                                dtype_name(a.dtype()) + ".");
  }
  return array(a.shape(), unary_out_dtype(op, a.dtype()), std::make_shared<Unary>(to_stream(s), op), {a});
}

// Float math: integer and bool inputs compute in float32 (MLX's at_least_float).
array float_unary(UnaryOp op, const char* name, const array& a, SD s) {
  return unary_node(op, name, astype(a, to_float_dtype(a.dtype()), s), s);
}

}  // namespace

array binary_node(BinaryOp op, const char* name, const array& a, const array& b, Dtype compute, SD s) {
  if (!(binary_info(op).kinds & math::kind_bit(compute))) {
    throw std::invalid_argument(std::string("[") + name + "] not supported for inputs of dtypes " +
                                dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()) + ".");
  }
  Shape shape = broadcast_shapes_for(name, {a.shape(), b.shape()});
  array x = broadcast_to(astype(a, compute, s), shape, s);
  array y = broadcast_to(astype(b, compute, s), shape, s);
  Dtype out = binary_info(op).result == BinaryResult::Bool ? Dtype::bool_ : compute;
  return array(std::move(shape), out, std::make_shared<Binary>(to_stream(s), op), {x, y});
}

Shape broadcast_shapes_for(const char* name, const std::vector<Shape>& shapes) {
  Shape out;
  for (const auto& sh : shapes) {
    const size_t n = std::max(out.size(), sh.size());
    Shape next(n);
    for (size_t i = 0; i < n; ++i) {
      ShapeElem da = i < n - out.size() ? 1 : out[i - (n - out.size())];
      ShapeElem db = i < n - sh.size() ? 1 : sh[i - (n - sh.size())];
      if (da != db && da != 1 && db != 1) {
        std::string all;
        for (size_t k = 0; k < shapes.size(); ++k) all += (k ? " and " : "") + shape_to_string(shapes[k]);
        throw std::invalid_argument(std::string("[") + name + "] shapes " + all + " cannot be broadcast together.");
      }
      next[i] = da == 1 ? db : da;
    }
    out = std::move(next);
  }
  return out;
}

// ---- unary

array abs(const array& a, SD s) { return unary_node(UnaryOp::Abs, "abs", a, s); }
array negative(const array& a, SD s) {
  if (a.dtype() == Dtype::bool_) throw std::invalid_argument("[negative] not supported for inputs of dtype bool.");
  return unary_node(UnaryOp::Negative, "negative", a, s);
}
// On bool, MLX's sign, square, floor, ceil and round are the identity (its
// kernels compute in bool, where each maps false to false and true to true).
array sign(const array& a, SD s) {
  return a.dtype() == Dtype::bool_ ? a : unary_node(UnaryOp::Sign, "sign", a, s);
}
array square(const array& a, SD s) {
  return a.dtype() == Dtype::bool_ ? a : unary_node(UnaryOp::Square, "square", a, s);
}
array floor(const array& a, SD s) {
  return a.dtype() == Dtype::bool_ ? a : unary_node(UnaryOp::Floor, "floor", a, s);
}
array ceil(const array& a, SD s) {
  return a.dtype() == Dtype::bool_ ? a : unary_node(UnaryOp::Ceil, "ceil", a, s);
}
array logical_not(const array& a, SD s) { return unary_node(UnaryOp::LogicalNot, "logical_not", a, s); }
array isnan(const array& a, SD s) { return unary_node(UnaryOp::IsNan, "isnan", a, s); }
array isinf(const array& a, SD s) { return unary_node(UnaryOp::IsInf, "isinf", a, s); }
array isfinite(const array& a, SD s) { return unary_node(UnaryOp::IsFinite, "isfinite", a, s); }
array bitwise_invert(const array& a, SD s) { return unary_node(UnaryOp::BitwiseInvert, "bitwise_invert", a, s); }

#define ALLOY_FLOAT_UNARY(fn, code) \
  array fn(const array& a, SD s) { return float_unary(UnaryOp::code, #fn, a, s); }
ALLOY_FLOAT_UNARY(exp, Exp)
ALLOY_FLOAT_UNARY(expm1, Expm1)
ALLOY_FLOAT_UNARY(log, Log)
ALLOY_FLOAT_UNARY(log1p, Log1p)
ALLOY_FLOAT_UNARY(log2, Log2)
ALLOY_FLOAT_UNARY(log10, Log10)
ALLOY_FLOAT_UNARY(sin, Sin)
ALLOY_FLOAT_UNARY(cos, Cos)
ALLOY_FLOAT_UNARY(tan, Tan)
ALLOY_FLOAT_UNARY(arcsin, ArcSin)
ALLOY_FLOAT_UNARY(arccos, ArcCos)
ALLOY_FLOAT_UNARY(arctan, ArcTan)
ALLOY_FLOAT_UNARY(sinh, Sinh)
ALLOY_FLOAT_UNARY(cosh, Cosh)
ALLOY_FLOAT_UNARY(tanh, Tanh)
ALLOY_FLOAT_UNARY(arcsinh, ArcSinh)
ALLOY_FLOAT_UNARY(arccosh, ArcCosh)
ALLOY_FLOAT_UNARY(arctanh, ArcTanh)
ALLOY_FLOAT_UNARY(sqrt, Sqrt)
ALLOY_FLOAT_UNARY(rsqrt, Rsqrt)
ALLOY_FLOAT_UNARY(sigmoid, Sigmoid)
ALLOY_FLOAT_UNARY(erf, Erf)
ALLOY_FLOAT_UNARY(erfinv, ErfInv)
#undef ALLOY_FLOAT_UNARY

array reciprocal(const array& a, SD s) {
  Dtype d = to_float_dtype(a.dtype());
  return divide(array(1.0f, d), a, s);
}

array round(const array& a, int decimals, SD s) {
  if (a.dtype() == Dtype::bool_) return a;
  // Complex: each part rounded, as MLX.
  if (is_complex(a.dtype())) {
    array i(std::complex<float>(0.0f, 1.0f));
    return add(astype(round(real(a, s), decimals, s), a.dtype(), s), multiply(round(imag(a, s), decimals, s), i, s), s);
  }
  if (decimals == 0) return unary_node(UnaryOp::Round, "round", a, s);
  // MLX's rule: scale, round half to even, unscale, back to the input dtype.
  Dtype d = to_float_dtype(a.dtype());
  double scale = std::pow(10.0, decimals);
  array r = multiply(astype(a, d, s), array(scale, d), s);
  r = unary_node(UnaryOp::Round, "round", r, s);
  r = divide(r, array(scale, d), s);
  return astype(r, a.dtype(), s);
}

array real(const array& a, SD s) {
  if (!is_complex(a.dtype())) return a;
  return unary_node(UnaryOp::Real, "real", a, s);
}
array imag(const array& a, SD s) {
  if (!is_complex(a.dtype())) return zeros_like(a, s);
  return unary_node(UnaryOp::Imag, "imag", a, s);
}
array conjugate(const array& a, SD s) {
  if (!is_complex(a.dtype())) return a;
  return unary_node(UnaryOp::Conjugate, "conjugate", a, s);
}

// ---- binary

#define ALLOY_PROMOTING_BINARY(fn, code) \
  array fn(const array& a, const array& b, SD s) { \
    return binary_node(BinaryOp::code, #fn, a, b, promote_types(a.dtype(), b.dtype()), s); \
  }
ALLOY_PROMOTING_BINARY(add, Add)
ALLOY_PROMOTING_BINARY(multiply, Multiply)
ALLOY_PROMOTING_BINARY(maximum, Maximum)
ALLOY_PROMOTING_BINARY(minimum, Minimum)
ALLOY_PROMOTING_BINARY(equal, Equal)
ALLOY_PROMOTING_BINARY(not_equal, NotEqual)
ALLOY_PROMOTING_BINARY(less, Less)
ALLOY_PROMOTING_BINARY(less_equal, LessEqual)
ALLOY_PROMOTING_BINARY(greater, Greater)
ALLOY_PROMOTING_BINARY(greater_equal, GreaterEqual)
#undef ALLOY_PROMOTING_BINARY

// Arithmetic on two bools: MLX computes in bool, so each result is the
// truth of the integer result, and these ops reduce to logical ones (a - b is
// a != b, a ** b is a || !b, a // b is a && b). Division by false is
// undefined in MLX (its answers differ between floor_divide and divmod);
// here it is false, as integer division by zero is 0.
array subtract(const array& a, const array& b, SD s) {
  const Dtype d = promote_types(a.dtype(), b.dtype());
  if (d == Dtype::bool_) return binary_node(BinaryOp::NotEqual, "subtract", a, b, d, s);
  return binary_node(BinaryOp::Subtract, "subtract", a, b, d, s);
}
array power(const array& a, const array& b, SD s) {
  const Dtype d = promote_types(a.dtype(), b.dtype());
  if (d == Dtype::bool_) {
    broadcast_shapes_for("power", {a.shape(), b.shape()});
    return logical_or(a, logical_not(b, s), s);
  }
  return binary_node(BinaryOp::Power, "power", a, b, d, s);
}
array remainder(const array& a, const array& b, SD s) {
  const Dtype d = promote_types(a.dtype(), b.dtype());
  if (d == Dtype::bool_) return zeros(broadcast_shapes_for("remainder", {a.shape(), b.shape()}), d, s);
  return binary_node(BinaryOp::Remainder, "remainder", a, b, d, s);
}
array floor_divide(const array& a, const array& b, SD s) {
  const Dtype d = promote_types(a.dtype(), b.dtype());
  if (d == Dtype::bool_) return binary_node(BinaryOp::LogicalAnd, "floor_divide", a, b, d, s);
  // Complex numbers have no floor: MLX's floor_divide of complex64 is divide.
  if (d == Dtype::complex64) return divide(a, b, s);
  // The kernels compute 16-bit floats in float32; MLX floors the quotient
  // rounded to the 16-bit type (7 // 1.167 in float16 is 6), so round first.
  if (d == float16 || d == bfloat16) return floor(divide(a, b, s), s);
  return binary_node(BinaryOp::FloorDivide, "floor_divide", a, b, d, s);
}

#define ALLOY_FLOAT_BINARY(fn, code) \
  array fn(const array& a, const array& b, SD s) { \
    return binary_node(BinaryOp::code, #fn, a, b, to_float_dtype(promote_types(a.dtype(), b.dtype())), s); \
  }
ALLOY_FLOAT_BINARY(divide, Divide)
ALLOY_FLOAT_BINARY(arctan2, ArcTan2)
ALLOY_FLOAT_BINARY(logaddexp, LogAddExp)
#undef ALLOY_FLOAT_BINARY

array logical_and(const array& a, const array& b, SD s) {
  return binary_node(BinaryOp::LogicalAnd, "logical_and", a, b, Dtype::bool_, s);
}
array logical_or(const array& a, const array& b, SD s) {
  return binary_node(BinaryOp::LogicalOr, "logical_or", a, b, Dtype::bool_, s);
}

namespace {
array bitwise_node(BinaryOp op, const char* name, const array& a, const array& b, bool shift, SD s) {
  Dtype t = promote_types(a.dtype(), b.dtype());
  if (!is_integral(t) && t != Dtype::bool_) {
    // RuntimeError in Python, as MLX raises it (not the ValueError of other dtype checks).
    throw std::runtime_error(std::string("[") + name + "] only integer and boolean inputs are allowed, got " +
                             dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()) + ".");
  }
  if (shift && t == Dtype::bool_) t = Dtype::uint8;
  return binary_node(op, name, a, b, t, s);
}
}  // namespace

array bitwise_and(const array& a, const array& b, SD s) { return bitwise_node(BinaryOp::BitwiseAnd, "bitwise_and", a, b, false, s); }
array bitwise_or(const array& a, const array& b, SD s) { return bitwise_node(BinaryOp::BitwiseOr, "bitwise_or", a, b, false, s); }
array bitwise_xor(const array& a, const array& b, SD s) { return bitwise_node(BinaryOp::BitwiseXor, "bitwise_xor", a, b, false, s); }
array left_shift(const array& a, const array& b, SD s) { return bitwise_node(BinaryOp::LeftShift, "left_shift", a, b, true, s); }
array right_shift(const array& a, const array& b, SD s) { return bitwise_node(BinaryOp::RightShift, "right_shift", a, b, true, s); }

array operator+(const array& a, const array& b) { return add(a, b); }
array operator-(const array& a, const array& b) { return subtract(a, b); }
array operator*(const array& a, const array& b) { return multiply(a, b); }
array operator/(const array& a, const array& b) { return divide(a, b); }
array operator-(const array& a) { return negative(a); }
array operator<(const array& a, const array& b) { return less(a, b); }
array operator<=(const array& a, const array& b) { return less_equal(a, b); }
array operator>(const array& a, const array& b) { return greater(a, b); }
array operator>=(const array& a, const array& b) { return greater_equal(a, b); }
array operator&&(const array& a, const array& b) { return logical_and(a, b); }
array operator||(const array& a, const array& b) { return logical_or(a, b); }
array operator!(const array& a) { return logical_not(a); }

// ---- ternary

array where(const array& condition, const array& x, const array& y, SD s) {
  Dtype t = promote_types(x.dtype(), y.dtype());
  Shape shape = broadcast_shapes_for("where", {condition.shape(), x.shape(), y.shape()});
  array c = broadcast_to(astype(condition, Dtype::bool_, s), shape, s);
  array xx = broadcast_to(astype(x, t, s), shape, s);
  array yy = broadcast_to(astype(y, t, s), shape, s);
  return array(std::move(shape), t, std::make_shared<Select>(to_stream(s)), {c, xx, yy});
}

array clip(const array& a, const std::optional<array>& a_min, const std::optional<array>& a_max, SD s) {
  if (!a_min && !a_max) throw std::invalid_argument("[clip] at most one of a_min and a_max may be None.");
  array r = a;
  if (a_min) r = maximum(r, *a_min, s);
  if (a_max) r = minimum(r, *a_max, s);
  return r;
}

}  // namespace alloy
