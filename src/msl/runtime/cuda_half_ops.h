// CUDA target: half arithmetic with Metal's promotion rules, after
// metal_base.h (it needs the traits and metal_common there).
//   half op half / integer -> half;  half op float (or a literal double) -> float;
//   half op bfloat -> float.
#pragma once

namespace metal {

template <class B> struct metal_common<half, B> {
  typedef conditional_t<is_integral_v<B> || is_same_v<B, half>, half, float> type;
};
template <class A> struct metal_common<A, half> { typedef typename metal_common<half, A>::type type; };
template <> struct metal_common<half, half> { typedef half type; };
template <> struct metal_common<half, double> { typedef float type; };
template <> struct metal_common<double, half> { typedef float type; };
template <> struct metal_common<half, bfloat> { typedef float type; };
template <> struct metal_common<bfloat, half> { typedef float type; };

// Templates constrained to scalars, so vectors never match (they broadcast a
// scalar through their own operators). The non-template (half, bfloat) forms
// break the tie with bfloat's own templates.
#define ALLOY_HALF_BINOP(op)                                                                \
  ALLOY_FUNC half operator op(half a, half b) { return half(float(a) op float(b)); }        \
  ALLOY_FUNC float operator op(half a, bfloat b) { return float(a) op float(b); }           \
  ALLOY_FUNC float operator op(bfloat a, half b) { return float(a) op float(b); }           \
  template <class U, enable_if_t<is_arithmetic_v<U> && !is_same_v<U, bfloat>, int> = 0>    \
  ALLOY_FUNC metal_common_t<half, U> operator op(half a, U b) {                             \
    typedef metal_common_t<half, U> R;                                                       \
    typedef conditional_t<is_same_v<R, half>, float, R> C;                                   \
    return R(C(a) op C(b));                                                                  \
  }                                                                                          \
  template <class U, enable_if_t<is_arithmetic_v<U> && !is_same_v<U, bfloat>, int> = 0>    \
  ALLOY_FUNC metal_common_t<half, U> operator op(U a, half b) {                             \
    typedef metal_common_t<half, U> R;                                                       \
    typedef conditional_t<is_same_v<R, half>, float, R> C;                                   \
    return R(C(a) op C(b));                                                                  \
  }                                                                                          \
  template <class U, enable_if_t<is_arithmetic_v<U>, int> = 0>                              \
  ALLOY_FUNC half& operator op##=(half & a, U b) { return a = half(float(a) op float(b)); }
ALLOY_HALF_BINOP(+)
ALLOY_HALF_BINOP(-)
ALLOY_HALF_BINOP(*)
ALLOY_HALF_BINOP(/)
#undef ALLOY_HALF_BINOP

#define ALLOY_HALF_CMP(op)                                                                  \
  ALLOY_FUNC bool operator op(half a, half b) { return float(a) op float(b); }              \
  ALLOY_FUNC bool operator op(half a, bfloat b) { return float(a) op float(b); }            \
  ALLOY_FUNC bool operator op(bfloat a, half b) { return float(a) op float(b); }            \
  template <class U, enable_if_t<is_arithmetic_v<U> && !is_same_v<U, bfloat>, int> = 0>    \
  ALLOY_FUNC bool operator op(half a, U b) { return float(a) op b; }                        \
  template <class U, enable_if_t<is_arithmetic_v<U> && !is_same_v<U, bfloat>, int> = 0>    \
  ALLOY_FUNC bool operator op(U a, half b) { return a op float(b); }
ALLOY_HALF_CMP(==)
ALLOY_HALF_CMP(!=)
ALLOY_HALF_CMP(<)
ALLOY_HALF_CMP(<=)
ALLOY_HALF_CMP(>)
ALLOY_HALF_CMP(>=)
#undef ALLOY_HALF_CMP

ALLOY_FUNC half operator-(half a) { return half::from_bits((unsigned short)(a.bits ^ 0x8000u)); }
ALLOY_FUNC half operator+(half a) { return a; }
ALLOY_FUNC bool operator!(half a) { return !float(a); }
ALLOY_FUNC half& operator++(half& a) { return a = half(float(a) + 1.0f); }
ALLOY_FUNC half& operator--(half& a) { return a = half(float(a) - 1.0f); }
ALLOY_FUNC half operator++(half& a, int) { half o = a; ++a; return o; }
ALLOY_FUNC half operator--(half& a, int) { half o = a; --a; return o; }

}  // namespace metal
