// Shared by both targets: the metal:: math, common, integer, relational and
// geometric functions on scalars and vectors, with metal::precise:: and
// metal::fast:: (the same functions here: the CPU always computes precisely).
// half and bfloat compute through float and round back, as Metal returns the
// argument's type. A double argument (a literal such as 0.5, float in MSL) is
// computed as float.
#pragma once

#include "metal_vector.h"

#if defined(__CUDACC__)
#define ALLOY_FMATH(name) ::name##f
#define ALLOY_EXP10F ::exp10f
#else
#define ALLOY_FMATH(name) __builtin_##name##f
#if __has_builtin(__builtin_exp10f)
#define ALLOY_EXP10F __builtin_exp10f
#else
// clang before 18 has no __builtin_exp10f: the C library's exp10f (a GNU
// extension), the function GCC's builtin calls.
extern "C" float exp10f(float) noexcept;
#define ALLOY_EXP10F ::exp10f
#endif
#endif

namespace metal {

namespace detail {
template <class T> struct vec_traits { static constexpr int n = 1; typedef T elem; };
template <class T, int N> struct vec_traits<vec<T, N>> { static constexpr int n = N; typedef T elem; };
// Result element type of a unary float function: half/bfloat/float keep their
// type, double and integers compute in float.
template <class T> using fres_t = conditional_t<is_same_v<T, half> || is_same_v<T, bfloat>, T, float>;
}  // namespace detail

// ---- one-argument float functions: f(float), f(half), f(bfloat), f(int...), f(vec)
#define ALLOY_MATH1_IMPL(name, expr)                                                   \
  template <class T, enable_if_t<is_arithmetic_v<T>, int> = 0>                       \
  ALLOY_FUNC detail::fres_t<T> name(T x_in) {                                         \
    float x = float(x_in);                                                            \
    return detail::fres_t<T>(expr);                                                   \
  }                                                                                   \
  template <class T, int N> ALLOY_FUNC vec<T, N> name(const vec<T, N>& v) {           \
    vec<T, N> r;                                                                      \
    for (int i = 0; i < N; ++i) r.at(i) = T(name(v.at(i)));                           \
    return r;                                                                         \
  }
#define ALLOY_MATH1(name) ALLOY_MATH1_IMPL(name, ALLOY_FMATH(name)(x))

ALLOY_MATH1(acos)
ALLOY_MATH1(acosh)
ALLOY_MATH1(asin)
ALLOY_MATH1(asinh)
ALLOY_MATH1(atan)
ALLOY_MATH1(atanh)
ALLOY_MATH1(cbrt)
ALLOY_MATH1(ceil)
ALLOY_MATH1(cos)
ALLOY_MATH1(cosh)
ALLOY_MATH1(erf)
ALLOY_MATH1(erfc)
ALLOY_MATH1(exp)
ALLOY_MATH1(exp2)
ALLOY_MATH1(expm1)
ALLOY_MATH1(fabs)
ALLOY_MATH1(floor)
ALLOY_MATH1(lgamma)
ALLOY_MATH1(log)
ALLOY_MATH1(log1p)
ALLOY_MATH1(log2)
ALLOY_MATH1(log10)
ALLOY_MATH1(rint)
ALLOY_MATH1(round)
ALLOY_MATH1(sin)
ALLOY_MATH1(sinh)
ALLOY_MATH1(sqrt)
ALLOY_MATH1(tan)
ALLOY_MATH1(tanh)
ALLOY_MATH1(tgamma)
ALLOY_MATH1(trunc)
namespace detail {
// sin(pi x) and cos(pi x) without rounding pi x: x = n / 2 + f with
// |f| <= 1/4 exactly (2x and its nearest integer n are exact in float),
// then a quarter turn by n mod 4. sinpi(-95.975) was 3e-4 relative off as
// sin(x * pi); sinpi(1) and cospi(0.5) now give zeros (sinpi's with x's
// sign, cospi's +0).
struct sin_cos { float s, c; };
ALLOY_FUNC sin_cos sin_cos_pi(float x) {
  const float n = ALLOY_FMATH(rint)(2.0f * x);
  const float f = x - 0.5f * n;
  const int q = (int(ALLOY_FMATH(fmod)(n, 4.0f)) + 4) % 4;
  const float s = ALLOY_FMATH(sin)(M_PI_F * f), c = ALLOY_FMATH(cos)(M_PI_F * f);
  sin_cos r{q == 0 ? s : q == 1 ? c : q == 2 ? -s : -c, q == 0 ? c : q == 1 ? -s : q == 2 ? -c : s};
  if (r.s == 0.0f) r.s = ALLOY_FMATH(copysign)(0.0f, x);
  if (r.c == 0.0f) r.c = 0.0f;
  return r;
}
ALLOY_FUNC float tan_pi(float x) {
  const sin_cos r = sin_cos_pi(x);
  return r.s / r.c;
}
// The largest value below one of type F (fract's bound: a float result
// just below one would round up to 1 in half or bfloat).
template <class F> inline constexpr float below_one = is_same_v<F, half>     ? 1.0f - 0x1p-11f
                                                      : is_same_v<F, bfloat> ? 1.0f - 0x1p-8f
                                                                             : 0x1.fffffep-1f;
}  // namespace detail

ALLOY_MATH1_IMPL(exp10, ALLOY_EXP10F(x))
ALLOY_MATH1_IMPL(rsqrt, 1.0f / ALLOY_FMATH(sqrt)(x))
ALLOY_MATH1_IMPL(cospi, detail::sin_cos_pi(x).c)
ALLOY_MATH1_IMPL(sinpi, detail::sin_cos_pi(x).s)
ALLOY_MATH1_IMPL(tanpi, detail::tan_pi(x))
ALLOY_MATH1_IMPL(fract, ALLOY_FMATH(fmin)(x - ALLOY_FMATH(floor)(x), detail::below_one<detail::fres_t<T>>))
ALLOY_MATH1_IMPL(saturate, ALLOY_FMATH(fmin)(ALLOY_FMATH(fmax)(x, 0.0f), 1.0f))
ALLOY_MATH1_IMPL(sign, x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : (x == x ? x : 0.0f)))
ALLOY_MATH1_IMPL(degrees, x * (180.0f / M_PI_F))
ALLOY_MATH1_IMPL(radians, x * (M_PI_F / 180.0f))

// ---- two- and three-argument float functions; mixed scalar types follow
// metal_common_t, a vector with a scalar broadcasts the scalar.
namespace detail {
template <class A, class B> struct common2 { typedef metal_common_t<A, B> type; };
template <class T, int N, class B> struct common2<vec<T, N>, B> { typedef vec<T, N> type; };
template <class A, class T, int N> struct common2<A, vec<T, N>> { typedef vec<T, N> type; };
template <class T, int N> struct common2<vec<T, N>, vec<T, N>> { typedef vec<T, N> type; };
template <class A, class B> using common2_t = typename common2<decay_scalar_t<A>, decay_scalar_t<B>>::type;
template <class A, class B, class C> using common3_t = common2_t<common2_t<A, B>, C>;
template <class T> inline constexpr bool is_vec_v = vec_traits<T>::n > 1;
template <class T> inline constexpr bool is_gen_v = is_arithmetic_v<T> || is_vec_v<T>;
template <class R, class A> ALLOY_FUNC R widen(const A& a) { return R(a); }
}  // namespace detail

#define ALLOY_MATH2_IMPL(name, expr)                                                       \
  template <class A, class B, enable_if_t<detail::is_gen_v<A> && detail::is_gen_v<B>, int> = 0> \
  ALLOY_FUNC detail::common2_t<A, B> name(const A& a_in, const B& b_in) {                  \
    typedef detail::common2_t<A, B> R;                                                      \
    if constexpr (detail::is_vec_v<R>) {                                                    \
      R a = R(a_in), b = R(b_in), r;                                                        \
      for (int i = 0; i < detail::vec_traits<R>::n; ++i) r.at(i) = name(a.at(i), b.at(i));  \
      return r;                                                                             \
    } else {                                                                                \
      typedef detail::fres_t<R> F;                                                          \
      float x = float(a_in), y = float(b_in);                                               \
      return R(F(expr));                                                                    \
    }                                                                                       \
  }
ALLOY_MATH2_IMPL(atan2, ALLOY_FMATH(atan2)(x, y))
ALLOY_MATH2_IMPL(copysign, ALLOY_FMATH(copysign)(x, y))
ALLOY_MATH2_IMPL(fdim, ALLOY_FMATH(fdim)(x, y))
ALLOY_MATH2_IMPL(fmax, ALLOY_FMATH(fmax)(x, y))
ALLOY_MATH2_IMPL(fmin, ALLOY_FMATH(fmin)(x, y))
ALLOY_MATH2_IMPL(fmod, ALLOY_FMATH(fmod)(x, y))
ALLOY_MATH2_IMPL(hypot, ALLOY_FMATH(hypot)(x, y))
// nextafter steps in the result's own type: half and bfloat by one of
// their units in the last place (through float they came back unchanged).
template <class A, class B, enable_if_t<detail::is_gen_v<A> && detail::is_gen_v<B>, int> = 0>
ALLOY_FUNC detail::common2_t<A, B> nextafter(const A& a_in, const B& b_in) {
  typedef detail::common2_t<A, B> R;
  if constexpr (detail::is_vec_v<R>) {
    R a = R(a_in), b = R(b_in), r;
    for (int i = 0; i < detail::vec_traits<R>::n; ++i) r.at(i) = nextafter(a.at(i), b.at(i));
    return r;
  } else if constexpr (is_same_v<R, half> || is_same_v<R, bfloat>) {
    const R x = R(a_in), y = R(b_in);
    const float fx = float(x), fy = float(y);
    if (fx != fx || fy != fy) return R(fx + fy);
    if (fx == fy) return y;
    unsigned short bits = __builtin_bit_cast(unsigned short, x);
    if ((bits & 0x7fffu) == 0) bits = fy > 0.0f ? 0x0001u : 0x8001u;  // the smallest subnormal toward y
    else if ((fx < fy) == (fx > 0.0f)) ++bits;                      // away from zero
    else --bits;
    return __builtin_bit_cast(R, bits);
  } else {
    return R(ALLOY_FMATH(nextafter)(float(a_in), float(b_in)));
  }
}
ALLOY_MATH2_IMPL(pow, ALLOY_FMATH(pow)(x, y))
ALLOY_MATH2_IMPL(powr, ALLOY_FMATH(pow)(x, y))
ALLOY_MATH2_IMPL(divide, x / y)
ALLOY_MATH2_IMPL(step, y < x ? 0.0f : 1.0f)

// min/max/clamp: integers compare as integers, floats follow fmin/fmax (a NaN
// operand yields the other operand).
template <class A, class B, enable_if_t<detail::is_gen_v<A> && detail::is_gen_v<B>, int> = 0>
ALLOY_FUNC detail::common2_t<A, B> max(const A& a_in, const B& b_in) {
  typedef detail::common2_t<A, B> R;
  typedef typename detail::vec_traits<R>::elem E;
  R a = R(a_in), b = R(b_in);
  if constexpr (detail::is_vec_v<R>) {
    for (int i = 0; i < detail::vec_traits<R>::n; ++i) a.at(i) = max(a.at(i), b.at(i));
    return a;
  } else if constexpr (is_integral_v<E>) {
    return a < b ? b : a;
  } else {
    return R(ALLOY_FMATH(fmax)(float(a), float(b)));
  }
}
template <class A, class B, enable_if_t<detail::is_gen_v<A> && detail::is_gen_v<B>, int> = 0>
ALLOY_FUNC detail::common2_t<A, B> min(const A& a_in, const B& b_in) {
  typedef detail::common2_t<A, B> R;
  typedef typename detail::vec_traits<R>::elem E;
  R a = R(a_in), b = R(b_in);
  if constexpr (detail::is_vec_v<R>) {
    for (int i = 0; i < detail::vec_traits<R>::n; ++i) a.at(i) = min(a.at(i), b.at(i));
    return a;
  } else if constexpr (is_integral_v<E>) {
    return b < a ? b : a;
  } else {
    return R(ALLOY_FMATH(fmin)(float(a), float(b)));
  }
}
template <class A, class B, class C>
ALLOY_FUNC detail::common3_t<A, B, C> clamp(const A& x, const B& lo, const C& hi) {
  typedef detail::common3_t<A, B, C> R;
  return min(max(R(x), R(lo)), R(hi));
}
template <class A, class B>
ALLOY_FUNC detail::common2_t<A, B> max3(const A& a, const B& b, const detail::common2_t<A, B>& c) {
  return max(max(a, b), c);
}
template <class A, class B>
ALLOY_FUNC detail::common2_t<A, B> min3(const A& a, const B& b, const detail::common2_t<A, B>& c) {
  return min(min(a, b), c);
}
template <class A, class B>
ALLOY_FUNC detail::common2_t<A, B> median3(const A& a, const B& b, const detail::common2_t<A, B>& c) {
  return max(min(a, b), min(max(a, b), c));
}
// The float forms: max and min already take fmax and fmin's NaN rule.
template <class A, class B>
ALLOY_FUNC detail::common2_t<A, B> fmax3(const A& a, const B& b, const detail::common2_t<A, B>& c) {
  return max3(a, b, c);
}
template <class A, class B>
ALLOY_FUNC detail::common2_t<A, B> fmin3(const A& a, const B& b, const detail::common2_t<A, B>& c) {
  return min3(a, b, c);
}
template <class A, class B>
ALLOY_FUNC detail::common2_t<A, B> fmedian3(const A& a, const B& b, const detail::common2_t<A, B>& c) {
  return median3(a, b, c);
}

template <class A, class B, class C>
ALLOY_FUNC detail::common3_t<A, B, C> mix(const A& x, const B& y, const C& t) {
  typedef detail::common3_t<A, B, C> R;
  return R(x) + (R(y) - R(x)) * R(t);
}
template <class A, class B, class C>
ALLOY_FUNC detail::common3_t<A, B, C> smoothstep(const A& e0, const B& e1, const C& x) {
  typedef detail::common3_t<A, B, C> R;
  R t = clamp((R(x) - R(e0)) / (R(e1) - R(e0)), 0, 1);
  return t * t * (R(3) - R(2) * t);
}
template <class A, class B, class C>
ALLOY_FUNC detail::common3_t<A, B, C> fma(const A& a_in, const B& b_in, const C& c_in) {
  typedef detail::common3_t<A, B, C> R;
  R a = R(a_in), b = R(b_in), c = R(c_in);
  if constexpr (detail::is_vec_v<R>) {
    for (int i = 0; i < detail::vec_traits<R>::n; ++i) a.at(i) = fma(a.at(i), b.at(i), c.at(i));
    return a;
  } else {
    return R(ALLOY_FMATH(fma)(float(a), float(b), float(c)));
  }
}
template <class A, class B, class C>
ALLOY_FUNC detail::common3_t<A, B, C> mad(const A& a, const B& b, const C& c) { return fma(a, b, c); }

// abs: integers stay integers; fabs for floats.
template <class T, enable_if_t<is_arithmetic_v<T>, int> = 0> ALLOY_FUNC T abs(T x) {
  if constexpr (is_integral_v<T>) {
    return x < T(0) ? T(-x) : x;
  } else {
    return T(ALLOY_FMATH(fabs)(float(x)));
  }
}
template <class T, int N> ALLOY_FUNC vec<T, N> abs(vec<T, N> v) {
  for (int i = 0; i < N; ++i) v.at(i) = abs(v.at(i));
  return v;
}

namespace precise {
using namespace ::metal;
}
namespace fast {
using namespace ::metal;
}

}  // namespace metal

#undef ALLOY_MATH1
#undef ALLOY_MATH1_IMPL
#undef ALLOY_MATH2_IMPL
