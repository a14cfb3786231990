// Element functors of the unary family, written once for every backend, and
// the table that says which dtypes each op accepts and what it returns.
// Functors see compute types only: 16-bit floats arrive as float (the kernel
// lifts them), integer inputs of float math were cast to float by the op.
#pragma once

#include "backend/common/math_shim.h"

namespace alloy {

// Result dtype of a unary op relative to its input.
enum class UnaryResult : uint8_t {
  Same,      // the input dtype
  Bool,      // predicates
  RealPart,  // the real counterpart for complex inputs (abs, real, imag), else Same
};

// The table: op code, accepted kinds, result. One row per op; everything
// else (enum, names, legality, dispatch) is generated from it.
#define ALLOY_UNARY_TABLE(X)                                   \
  X(Abs, math::kAny, UnaryResult::RealPart)                    \
  X(Negative, math::kNumber, UnaryResult::Same)                \
  X(Sign, math::kNumber, UnaryResult::Same)                    \
  X(Exp, math::kFloat | math::kComplex, UnaryResult::Same)     \
  X(Expm1, math::kFloat | math::kComplex, UnaryResult::Same)   \
  X(Log, math::kFloat | math::kComplex, UnaryResult::Same)     \
  X(Log1p, math::kFloat | math::kComplex, UnaryResult::Same)   \
  X(Log2, math::kFloat | math::kComplex, UnaryResult::Same)    \
  X(Log10, math::kFloat | math::kComplex, UnaryResult::Same)   \
  X(Sin, math::kFloat | math::kComplex, UnaryResult::Same)     \
  X(Cos, math::kFloat | math::kComplex, UnaryResult::Same)     \
  X(Tan, math::kFloat | math::kComplex, UnaryResult::Same)     \
  X(ArcSin, math::kFloat | math::kComplex, UnaryResult::Same)  \
  X(ArcCos, math::kFloat | math::kComplex, UnaryResult::Same)  \
  X(ArcTan, math::kFloat | math::kComplex, UnaryResult::Same)  \
  X(Sinh, math::kFloat | math::kComplex, UnaryResult::Same)    \
  X(Cosh, math::kFloat | math::kComplex, UnaryResult::Same)    \
  X(Tanh, math::kFloat | math::kComplex, UnaryResult::Same)    \
  X(ArcSinh, math::kFloat | math::kComplex, UnaryResult::Same) \
  X(ArcCosh, math::kFloat | math::kComplex, UnaryResult::Same) \
  X(ArcTanh, math::kFloat | math::kComplex, UnaryResult::Same) \
  X(Sqrt, math::kFloat | math::kComplex, UnaryResult::Same)    \
  X(Rsqrt, math::kFloat | math::kComplex, UnaryResult::Same)   \
  X(Square, math::kNumber, UnaryResult::Same)                  \
  X(Floor, math::kReal, UnaryResult::Same)                     \
  X(Ceil, math::kReal, UnaryResult::Same)                      \
  X(Round, math::kReal, UnaryResult::Same)                     \
  X(Sigmoid, math::kFloat, UnaryResult::Same)                  \
  X(Erf, math::kFloat, UnaryResult::Same)                      \
  X(ErfInv, math::kFloat, UnaryResult::Same)                   \
  X(LogicalNot, math::kAny, UnaryResult::Bool)                 \
  X(IsNan, math::kAny, UnaryResult::Bool)                      \
  X(IsInf, math::kAny, UnaryResult::Bool)                      \
  X(IsFinite, math::kAny, UnaryResult::Bool)                   \
  X(BitwiseInvert, math::kBool | math::kInt, UnaryResult::Same) \
  X(Real, math::kComplex, UnaryResult::RealPart)               \
  X(Imag, math::kComplex, UnaryResult::RealPart)               \
  X(Conjugate, math::kComplex, UnaryResult::Same)

enum class UnaryOp : uint8_t {
#define ALLOY_UNARY_ENUM(name, kinds, result) name,
  ALLOY_UNARY_TABLE(ALLOY_UNARY_ENUM)
#undef ALLOY_UNARY_ENUM
};

struct UnaryOpInfo {
  const char* name;
  unsigned kinds;
  UnaryResult result;
};

inline constexpr UnaryOpInfo kUnaryOps[] = {
#define ALLOY_UNARY_ROW(name, kinds, result) {#name, kinds, result},
    ALLOY_UNARY_TABLE(ALLOY_UNARY_ROW)
#undef ALLOY_UNARY_ROW
};

constexpr const UnaryOpInfo& unary_info(UnaryOp op) { return kUnaryOps[static_cast<int>(op)]; }

template <UnaryOp Op, typename T>
inline constexpr bool unary_legal = (unary_info(Op).kinds & math::kind_bit<T>()) != 0;

// Output C++ type of op on T (the compile-time twin of unary_out_dtype).
template <UnaryOp Op, typename T>
struct unary_out {
  static constexpr UnaryResult r = unary_info(Op).result;
  using type = std::conditional_t<r == UnaryResult::Bool, bool,
                                  std::conditional_t<r == UnaryResult::RealPart && math::is_complex_v<T>,
                                                     typename math::real_type<T>::type, T>>;
};

namespace unary {

// Functors: operator()(x) on a compute type. One struct per op code.
template <UnaryOp Op>
struct Fn;

#define ALLOY_UNARY_FN(op, expr)            \
  template <>                               \
  struct Fn<UnaryOp::op> {                  \
    template <typename T>                   \
    ALLOY_HD auto operator()(T x) const {   \
      return expr;                          \
    }                                       \
  };

template <>
struct Fn<UnaryOp::Abs> {
  template <typename T>
  ALLOY_HD auto operator()(T x) const {
    if constexpr (math::is_complex_v<T>) return math::abs(x);
    else if constexpr (std::is_unsigned_v<T>) return x;  // bool too
    else if constexpr (std::is_integral_v<T>) return T(x < 0 ? T(0 - math::wrap_t<T>(x)) : x);
    else return math::fabs(x);
  }
};
template <>
struct Fn<UnaryOp::Negative> {
  template <typename T>
  ALLOY_HD T operator()(T x) const {
    if constexpr (std::is_integral_v<T>) return T(math::wrap_t<T>(0) - math::wrap_t<T>(x));
    else return -x;
  }
};
template <>
struct Fn<UnaryOp::Sign> {
  template <typename T>
  ALLOY_HD T operator()(T x) const {
    if constexpr (math::is_complex_v<T>) {
      auto m = math::abs(x);
      return m == 0 ? T(0) : x / m;
    } else if constexpr (std::is_unsigned_v<T>) {
      return T(x != 0);
    } else {
      // NaN stays NaN (both comparisons are false, and 0 is wrong for NaN).
      if constexpr (std::is_floating_point_v<T>) {
        if (math::isnan(x)) return x;
      }
      return T((x > T(0)) - (x < T(0)));
    }
  }
};
ALLOY_UNARY_FN(Exp, math::exp(x))
template <>
struct Fn<UnaryOp::Expm1> {
  template <typename T>
  ALLOY_HD T operator()(T x) const {
    if constexpr (math::is_complex_v<T>) return math::exp(x) - T(1);
    else return math::expm1(x);
  }
};
ALLOY_UNARY_FN(Log, math::log(x))
ALLOY_UNARY_FN(Log1p, math::log1p(x))
template <>
struct Fn<UnaryOp::Log2> {
  template <typename T>
  ALLOY_HD T operator()(T x) const {
    if constexpr (math::is_complex_v<T>) return math::log(x) / typename T::value_type(0.6931471805599453);
    else return math::log2(x);
  }
};
ALLOY_UNARY_FN(Log10, math::log10(x))
ALLOY_UNARY_FN(Sin, math::sin(x))
ALLOY_UNARY_FN(Cos, math::cos(x))
ALLOY_UNARY_FN(Tan, math::tan(x))
ALLOY_UNARY_FN(ArcSin, math::asin(x))
ALLOY_UNARY_FN(ArcCos, math::acos(x))
ALLOY_UNARY_FN(ArcTan, math::atan(x))
ALLOY_UNARY_FN(Sinh, math::sinh(x))
ALLOY_UNARY_FN(Cosh, math::cosh(x))
ALLOY_UNARY_FN(Tanh, math::tanh(x))
ALLOY_UNARY_FN(ArcSinh, math::asinh(x))
ALLOY_UNARY_FN(ArcCosh, math::acosh(x))
ALLOY_UNARY_FN(ArcTanh, math::atanh(x))
ALLOY_UNARY_FN(Sqrt, math::sqrt(x))
ALLOY_UNARY_FN(Rsqrt, T(1) / math::sqrt(x))
template <>
struct Fn<UnaryOp::Square> {
  template <typename T>
  ALLOY_HD T operator()(T x) const {
    if constexpr (std::is_integral_v<T>) return T(math::wrap_t<T>(x) * math::wrap_t<T>(x));
    else return x * x;
  }
};
template <>
struct Fn<UnaryOp::Floor> {
  template <typename T>
  ALLOY_HD T operator()(T x) const {
    if constexpr (std::is_integral_v<T>) return x;
    else return math::floor(x);
  }
};
template <>
struct Fn<UnaryOp::Ceil> {
  template <typename T>
  ALLOY_HD T operator()(T x) const {
    if constexpr (std::is_integral_v<T>) return x;
    else return math::ceil(x);
  }
};
template <>
struct Fn<UnaryOp::Round> {
  template <typename T>
  ALLOY_HD T operator()(T x) const {
    if constexpr (std::is_integral_v<T>) return x;
    else return math::rint(x);
  }
};
ALLOY_UNARY_FN(Sigmoid, T(1) / (T(1) + math::exp(-x)))
ALLOY_UNARY_FN(Erf, math::erf(x))
ALLOY_UNARY_FN(ErfInv, math::erfinv(x))
ALLOY_UNARY_FN(LogicalNot, x == T(0))
ALLOY_UNARY_FN(IsNan, math::isnan(x))
ALLOY_UNARY_FN(IsInf, math::isinf(x))
ALLOY_UNARY_FN(IsFinite, !math::isnan(x) && !math::isinf(x))
template <>
struct Fn<UnaryOp::BitwiseInvert> {
  template <typename T>
  ALLOY_HD T operator()(T x) const {
    if constexpr (std::is_same_v<T, bool>) return !x;
    else return T(~x);
  }
};
ALLOY_UNARY_FN(Real, x.real())
ALLOY_UNARY_FN(Imag, x.imag())
ALLOY_UNARY_FN(Conjugate, math::conj(x))
#undef ALLOY_UNARY_FN

}  // namespace unary

// Calls f(std::integral_constant<UnaryOp, op>{}) for the runtime op code.
template <typename F>
decltype(auto) dispatch_unary_op(UnaryOp op, F&& f) {
  switch (op) {
#define ALLOY_UNARY_CASE(name, kinds, result) \
  case UnaryOp::name:                         \
    return f(std::integral_constant<UnaryOp, UnaryOp::name>{});
    ALLOY_UNARY_TABLE(ALLOY_UNARY_CASE)
#undef ALLOY_UNARY_CASE
  }
  return f(std::integral_constant<UnaryOp, UnaryOp::Abs>{});  // unreachable
}

}  // namespace alloy
