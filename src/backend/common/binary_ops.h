// Element functors of the binary family and their legality table. Both
// operands arrive in one (promoted) compute type; integer arithmetic wraps
// through the unsigned type of the same width, as numpy and MLX do, and
// division by zero or by -1 at the minimum never traps.
#pragma once

#include "backend/common/math_shim.h"

namespace alloy {

enum class BinaryResult : uint8_t { Same, Bool };

#define ALLOY_BINARY_TABLE(X)                                     \
  X(Add, math::kAny, BinaryResult::Same)                          \
  X(Subtract, math::kNumber, BinaryResult::Same)                  \
  X(Multiply, math::kAny, BinaryResult::Same)                     \
  X(Divide, math::kFloat | math::kComplex, BinaryResult::Same)    \
  X(FloorDivide, math::kReal, BinaryResult::Same)                 \
  X(Remainder, math::kReal, BinaryResult::Same)                   \
  X(Power, math::kNumber, BinaryResult::Same)                     \
  X(Maximum, math::kAny, BinaryResult::Same)                      \
  X(Minimum, math::kAny, BinaryResult::Same)                      \
  X(Equal, math::kAny, BinaryResult::Bool)                        \
  X(EqualNan, math::kAny, BinaryResult::Bool)                     \
  X(NotEqual, math::kAny, BinaryResult::Bool)                     \
  X(Less, math::kAny, BinaryResult::Bool)                         \
  X(LessEqual, math::kAny, BinaryResult::Bool)                    \
  X(Greater, math::kAny, BinaryResult::Bool)                      \
  X(GreaterEqual, math::kAny, BinaryResult::Bool)                 \
  X(LogicalAnd, math::kBool, BinaryResult::Bool)                  \
  X(LogicalOr, math::kBool, BinaryResult::Bool)                   \
  X(BitwiseAnd, math::kBool | math::kInt, BinaryResult::Same)     \
  X(BitwiseOr, math::kBool | math::kInt, BinaryResult::Same)      \
  X(BitwiseXor, math::kBool | math::kInt, BinaryResult::Same)     \
  X(LeftShift, math::kInt, BinaryResult::Same)                    \
  X(RightShift, math::kInt, BinaryResult::Same)                   \
  X(ArcTan2, math::kFloat, BinaryResult::Same)                    \
  X(LogAddExp, math::kFloat | math::kComplex, BinaryResult::Same)

enum class BinaryOp : uint8_t {
#define ALLOY_BINARY_ENUM(name, kinds, result) name,
  ALLOY_BINARY_TABLE(ALLOY_BINARY_ENUM)
#undef ALLOY_BINARY_ENUM
};

struct BinaryOpInfo {
  const char* name;
  unsigned kinds;
  BinaryResult result;
};

inline constexpr BinaryOpInfo kBinaryOps[] = {
#define ALLOY_BINARY_ROW(name, kinds, result) {#name, kinds, result},
    ALLOY_BINARY_TABLE(ALLOY_BINARY_ROW)
#undef ALLOY_BINARY_ROW
};

constexpr const BinaryOpInfo& binary_info(BinaryOp op) { return kBinaryOps[static_cast<int>(op)]; }

template <BinaryOp Op, typename T>
inline constexpr bool binary_legal = (binary_info(Op).kinds & math::kind_bit<T>()) != 0;

template <BinaryOp Op, typename T>
using binary_out_t = std::conditional_t<binary_info(Op).result == BinaryResult::Bool, bool, T>;

namespace binary {

template <BinaryOp Op>
struct Fn;

#define ALLOY_BINARY_FN(op, expr)                \
  template <>                                    \
  struct Fn<BinaryOp::op> {                      \
    template <typename T>                        \
    ALLOY_HD auto operator()(T a, T b) const {   \
      return expr;                               \
    }                                            \
  };

// Integer + - * wrap (through unsigned: signed overflow is undefined in C++);
// bool results are the logical value of the integer result.
template <typename T, typename F>
ALLOY_HD inline T wrapping(T a, T b, F f) {
  if constexpr (std::is_same_v<T, bool>) return f(int(a), int(b)) != 0;
  else if constexpr (std::is_integral_v<T>) return T(f(math::wrap_t<T>(a), math::wrap_t<T>(b)));
  else return f(a, b);
}

ALLOY_BINARY_FN(Add, wrapping(a, b, [](auto x, auto y) { return decltype(x)(x + y); }))
ALLOY_BINARY_FN(Subtract, wrapping(a, b, [](auto x, auto y) { return decltype(x)(x - y); }))
ALLOY_BINARY_FN(Multiply, wrapping(a, b, [](auto x, auto y) { return decltype(x)(x * y); }))
ALLOY_BINARY_FN(Divide, a / b)

template <>
struct Fn<BinaryOp::FloorDivide> {
  template <typename T>
  ALLOY_HD T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) return T(0);  // numpy's answer (with a warning there)
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return T(math::wrap_t<T>(0) - math::wrap_t<T>(a));
        T q = T(a / b);
        return (a % b != 0 && ((a < 0) != (b < 0))) ? T(q - 1) : q;
      } else {
        return T(a / b);
      }
    } else {
      // MLX's: floor of the quotient rounded to T (1 // 0.1 is 10, where
      // numpy's fmod-based formulation gives 9; a float16 quotient rounds to
      // float16 before the floor).
      return math::floor(T(a / b));
    }
  }
};

template <>
struct Fn<BinaryOp::Remainder> {
  template <typename T>
  ALLOY_HD T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) return T(0);
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return T(0);
        T r = T(a % b);
        return (r != 0 && ((r < 0) != (b < 0))) ? T(r + b) : r;
      } else {
        return T(a % b);
      }
    } else {
      T r = math::fmod(a, b);
      if (r != T(0) && ((r < T(0)) != (b < T(0)))) r += b;
      return r;
    }
  }
};

template <>
struct Fn<BinaryOp::Power> {
  template <typename T>
  ALLOY_HD T operator()(T base, T exp) const {
    if constexpr (std::is_integral_v<T>) {
      if constexpr (std::is_signed_v<T>) {
        // Negative exponents have no integer result but for bases 1 and -1.
        if (exp < 0) return base == 1 ? T(1) : base == T(-1) ? T((exp & 1) ? -1 : 1) : T(0);
      }
      using W = math::wrap_t<T>;
      W result = 1, b = W(base);
      auto e = W(exp);
      while (e) {
        if (e & 1) result = W(result * b);
        b = W(b * b);
        e >>= 1;
      }
      return T(result);
    } else {
      return math::pow(base, exp);
    }
  }
};

// Both propagate NaN, as numpy.maximum/minimum; complex numbers in MLX's
// order (math::less).
template <>
struct Fn<BinaryOp::Maximum> {
  template <typename T>
  ALLOY_HD T operator()(T a, T b) const {
    if (math::isnan(a) || math::isnan(b)) return math::isnan(a) ? a : b;
    return math::greater(a, b) ? a : b;
  }
};
template <>
struct Fn<BinaryOp::Minimum> {
  template <typename T>
  ALLOY_HD T operator()(T a, T b) const {
    if (math::isnan(a) || math::isnan(b)) return math::isnan(a) ? a : b;
    return math::less(a, b) ? a : b;
  }
};

ALLOY_BINARY_FN(Equal, a == b)
ALLOY_BINARY_FN(EqualNan, a == b || (math::isnan(a) && math::isnan(b)))
ALLOY_BINARY_FN(NotEqual, a != b)
ALLOY_BINARY_FN(Less, math::less(a, b))
ALLOY_BINARY_FN(LessEqual, math::less(a, b) || a == b)
ALLOY_BINARY_FN(Greater, math::greater(a, b))
ALLOY_BINARY_FN(GreaterEqual, math::greater(a, b) || a == b)
ALLOY_BINARY_FN(LogicalAnd, a && b)
ALLOY_BINARY_FN(LogicalOr, a || b)
ALLOY_BINARY_FN(BitwiseAnd, T(a & b))
ALLOY_BINARY_FN(BitwiseOr, T(a | b))
ALLOY_BINARY_FN(BitwiseXor, T(a ^ b))

// Counts outside [0, bits) give numpy's answers instead of undefined behaviour.
template <>
struct Fn<BinaryOp::LeftShift> {
  template <typename T>
  ALLOY_HD T operator()(T a, T b) const {
    using W = math::wrap_t<T>;
    if (W(b) >= W(sizeof(T) * 8)) return T(0);
    return T(W(a) << W(b));
  }
};
template <>
struct Fn<BinaryOp::RightShift> {
  template <typename T>
  ALLOY_HD T operator()(T a, T b) const {
    using W = math::wrap_t<T>;
    if (W(b) >= W(sizeof(T) * 8)) {
      if constexpr (std::is_signed_v<T>) return a < 0 ? T(-1) : T(0);
      else return T(0);
    }
    return T(a >> b);
  }
};

ALLOY_BINARY_FN(ArcTan2, math::atan2(a, b))

template <>
struct Fn<BinaryOp::LogAddExp> {
  template <typename T>
  ALLOY_HD T operator()(T a, T b) const {
    if (math::isnan(a) || math::isnan(b)) return a + b;
    const bool a_first = math::greater(a, b);
    T hi = a_first ? a : b, lo = a_first ? b : a;
    // Infinite real parts: -inf adds nothing (also both -inf, which a scan's
    // padding combines), +inf absorbs everything.
    using R = typename math::real_type<T>::type;
    if (math::real_part(lo) == -math::inf<R>() || math::real_part(hi) == math::inf<R>()) return hi;
    return hi + math::log1p(math::exp(lo - hi));
  }
};
#undef ALLOY_BINARY_FN

}  // namespace binary

template <typename F>
decltype(auto) dispatch_binary_op(BinaryOp op, F&& f) {
  switch (op) {
#define ALLOY_BINARY_CASE(name, kinds, result) \
  case BinaryOp::name:                         \
    return f(std::integral_constant<BinaryOp, BinaryOp::name>{});
    ALLOY_BINARY_TABLE(ALLOY_BINARY_CASE)
#undef ALLOY_BINARY_CASE
  }
  return f(std::integral_constant<BinaryOp, BinaryOp::Add>{});  // unreachable
}

}  // namespace alloy
