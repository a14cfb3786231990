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
#else
#define ALLOY_FMATH(name) __builtin_##name##f
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
ALLOY_MATH1_IMPL(exp10, ALLOY_FMATH(exp2)(x * 3.32192809488736234787f))
ALLOY_MATH1_IMPL(rsqrt, 1.0f / ALLOY_FMATH(sqrt)(x))
ALLOY_MATH1_IMPL(cospi, ALLOY_FMATH(cos)(x * M_PI_F))
ALLOY_MATH1_IMPL(sinpi, ALLOY_FMATH(sin)(x * M_PI_F))
ALLOY_MATH1_IMPL(tanpi, ALLOY_FMATH(tan)(x * M_PI_F))
ALLOY_MATH1_IMPL(fract, ALLOY_FMATH(fmin)(x - ALLOY_FMATH(floor)(x), 0x1.fffffep-1f))
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
ALLOY_MATH2_IMPL(nextafter, ALLOY_FMATH(nextafter)(x, y))
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

// ---- functions with an output argument
template <class T, enable_if_t<is_arithmetic_v<T>, int> = 0> ALLOY_FUNC T frexp(T x, int& e) {
  return T(ALLOY_FMATH(frexp)(float(x), &e));
}
template <class T, enable_if_t<is_arithmetic_v<T>, int> = 0> ALLOY_FUNC T ldexp(T x, int e) {
  return T(ALLOY_FMATH(ldexp)(float(x), e));
}
template <class T, enable_if_t<is_arithmetic_v<T>, int> = 0> ALLOY_FUNC T modf(T x, T& ip) {
  float i;
  T f = T(ALLOY_FMATH(modf)(float(x), &i));
  ip = T(i);
  return f;
}
template <class T, enable_if_t<is_arithmetic_v<T>, int> = 0> ALLOY_FUNC T sincos(T x, T& c) {
  c = T(ALLOY_FMATH(cos)(float(x)));
  return T(ALLOY_FMATH(sin)(float(x)));
}
template <class T, enable_if_t<is_arithmetic_v<T>, int> = 0> ALLOY_FUNC int ilogb(T x) {
  return ALLOY_FMATH(ilogb)(float(x));
}

// ---- relational
template <class T, enable_if_t<is_arithmetic_v<T>, int> = 0> ALLOY_FUNC bool isnan(T x) { return float(x) != float(x); }
template <class T, enable_if_t<is_arithmetic_v<T>, int> = 0> ALLOY_FUNC bool isinf(T x) {
  return ALLOY_FMATH(fabs)(float(x)) == __builtin_inff();
}
template <class T, enable_if_t<is_arithmetic_v<T>, int> = 0> ALLOY_FUNC bool isfinite(T x) {
  return ALLOY_FMATH(fabs)(float(x)) < __builtin_inff();
}
template <class T, enable_if_t<is_arithmetic_v<T>, int> = 0> ALLOY_FUNC bool isnormal(T x) {
  float a = ALLOY_FMATH(fabs)(float(x));
  return a >= float(numeric_limits<T>::min()) && a < __builtin_inff();
}
template <class T, enable_if_t<is_arithmetic_v<T>, int> = 0> ALLOY_FUNC bool signbit(T x) {
  return (__builtin_bit_cast(uint32_t, float(x)) >> 31) != 0;
}
#define ALLOY_REL_VEC(name)                                         \
  template <class T, int N> ALLOY_FUNC vec<bool, N> name(const vec<T, N>& v) { \
    vec<bool, N> r;                                                 \
    for (int i = 0; i < N; ++i) r.at(i) = name(v.at(i));            \
    return r;                                                       \
  }
ALLOY_REL_VEC(isnan)
ALLOY_REL_VEC(isinf)
ALLOY_REL_VEC(isfinite)
ALLOY_REL_VEC(isnormal)
ALLOY_REL_VEC(signbit)
#undef ALLOY_REL_VEC
ALLOY_FUNC bool all(bool b) { return b; }
ALLOY_FUNC bool any(bool b) { return b; }
template <class T, int N> ALLOY_FUNC bool all(const vec<T, N>& v) {
  bool r = true;
  for (int i = 0; i < N; ++i) r = r && bool(v.at(i));
  return r;
}
template <class T, int N> ALLOY_FUNC bool any(const vec<T, N>& v) {
  bool r = false;
  for (int i = 0; i < N; ++i) r = r || bool(v.at(i));
  return r;
}
// select(a, b, c): c ? b : a, per component.
template <class T> ALLOY_FUNC T select(const T& a, const T& b, bool c) { return c ? b : a; }
template <class T, int N> ALLOY_FUNC vec<T, N> select(const vec<T, N>& a, const vec<T, N>& b, const vec<bool, N>& c) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r.at(i) = c.at(i) ? b.at(i) : a.at(i);
  return r;
}

// ---- geometric
template <class T, int N> ALLOY_FUNC T dot(const vec<T, N>& a, const vec<T, N>& b) {
  T s = a.at(0) * b.at(0);
  for (int i = 1; i < N; ++i) s += a.at(i) * b.at(i);
  return s;
}
template <class T> ALLOY_FUNC vec<T, 3> cross(const vec<T, 3>& a, const vec<T, 3>& b) {
  return vec<T, 3>(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
template <class T, int N> ALLOY_FUNC T length_squared(const vec<T, N>& a) { return dot(a, a); }
template <class T, int N> ALLOY_FUNC T length(const vec<T, N>& a) { return T(sqrt(dot(a, a))); }
template <class T, int N> ALLOY_FUNC T distance(const vec<T, N>& a, const vec<T, N>& b) { return length(a - b); }
template <class T, int N> ALLOY_FUNC T distance_squared(const vec<T, N>& a, const vec<T, N>& b) {
  return length_squared(a - b);
}
template <class T, int N> ALLOY_FUNC vec<T, N> normalize(const vec<T, N>& a) { return a * T(rsqrt(dot(a, a))); }

// ---- integer functions
namespace detail {
template <class T> ALLOY_FUNC constexpr int bits_of() { return int(sizeof(T) * 8); }
template <class T> ALLOY_FUNC unsigned long long as_u64(T x) {
  return static_cast<unsigned long long>(static_cast<make_unsigned_t<T>>(x));
}
}  // namespace detail
namespace detail {
template <class T> using wide_t = conditional_t<is_signed_v<T>, __int128, unsigned __int128>;
template <class T> ALLOY_FUNC T saturate_wide(__int128 v) {
  __int128 lo = static_cast<__int128>(numeric_limits<T>::min());
  __int128 hi = static_cast<__int128>(numeric_limits<T>::max());
  return T(v < lo ? lo : (v > hi ? hi : v));
}
template <class T> ALLOY_FUNC T reverse_bits_of(T x) {
  unsigned long long u = as_u64(x), r = 0;
  for (int i = 0; i < bits_of<T>(); ++i) r |= ((u >> i) & 1ull) << (bits_of<T>() - 1 - i);
  return T(r);
}
}  // namespace detail
#define ALLOY_INT1(name, expr)                                                       \
  template <class T, enable_if_t<is_integral_v<T>, int> = 0> ALLOY_FUNC T name(T x) { \
    unsigned long long u = detail::as_u64(x);                                        \
    constexpr int B = detail::bits_of<T>();                                          \
    (void)u;                                                                         \
    (void)B;                                                                         \
    return T(expr);                                                                  \
  }                                                                                  \
  template <class T, int N> ALLOY_FUNC vec<T, N> name(vec<T, N> v) {                  \
    for (int i = 0; i < N; ++i) v.at(i) = name(v.at(i));                             \
    return v;                                                                        \
  }
ALLOY_INT1(popcount, __builtin_popcountll(u))
ALLOY_INT1(clz, u == 0 ? B : __builtin_clzll(u) - (64 - B))
ALLOY_INT1(ctz, u == 0 ? B : __builtin_ctzll(u))
ALLOY_INT1(reverse_bits, detail::reverse_bits_of(x))
#undef ALLOY_INT1

#define ALLOY_INT2(name, expr)                                                                   \
  template <class T, enable_if_t<is_integral_v<T>, int> = 0> ALLOY_FUNC auto name(T x, T y) {    \
    return expr;                                                                                 \
  }                                                                                              \
  template <class T, int N> ALLOY_FUNC auto name(const vec<T, N>& a, const vec<T, N>& b) {       \
    vec<decltype(name(a.at(0), b.at(0))), N> r;                                                  \
    for (int i = 0; i < N; ++i) r.at(i) = name(a.at(i), b.at(i));                                \
    return r;                                                                                    \
  }
ALLOY_INT2(mulhi, T((static_cast<detail::wide_t<T>>(x) * static_cast<detail::wide_t<T>>(y)) >> detail::bits_of<T>()))
ALLOY_INT2(abs_diff, make_unsigned_t<T>(x > y ? make_unsigned_t<T>(x) - make_unsigned_t<T>(y)
                                              : make_unsigned_t<T>(y) - make_unsigned_t<T>(x)))
ALLOY_INT2(absdiff, abs_diff(x, y))
ALLOY_INT2(hadd, T((static_cast<detail::wide_t<T>>(x) + static_cast<detail::wide_t<T>>(y)) >> 1))
ALLOY_INT2(rhadd, T((static_cast<detail::wide_t<T>>(x) + static_cast<detail::wide_t<T>>(y) + 1) >> 1))
ALLOY_INT2(add_sat, detail::saturate_wide<T>(static_cast<__int128>(x) + static_cast<__int128>(y)))
ALLOY_INT2(sub_sat, detail::saturate_wide<T>(static_cast<__int128>(x) - static_cast<__int128>(y)))
ALLOY_INT2(addsat, add_sat(x, y))
ALLOY_INT2(subsat, sub_sat(x, y))
ALLOY_INT2(mul24, T(x * y))
ALLOY_INT2(rotate, T((detail::as_u64(x) << (detail::as_u64(y) % detail::bits_of<T>())) |
                     (detail::as_u64(y) % detail::bits_of<T>() == 0
                          ? 0
                          : detail::as_u64(x) >> (detail::bits_of<T>() - detail::as_u64(y) % detail::bits_of<T>()))))
#undef ALLOY_INT2
template <class T, enable_if_t<is_integral_v<T>, int> = 0> ALLOY_FUNC T madhi(T a, T b, T c) { return T(mulhi(a, b) + c); }
template <class T, enable_if_t<is_integral_v<T>, int> = 0> ALLOY_FUNC T mad24(T a, T b, T c) { return T(a * b + c); }
template <class T, enable_if_t<is_integral_v<T>, int> = 0>
ALLOY_FUNC T extract_bits(T x, uint offset, uint bits) {
  if (bits == 0) return T(0);
  constexpr int B = detail::bits_of<T>();
  T shifted = T(x << (B - offset - bits));
  return T(shifted >> (B - bits));  // arithmetic shift sign-extends signed types, as Metal does
}
template <class T, enable_if_t<is_integral_v<T>, int> = 0>
ALLOY_FUNC T insert_bits(T base, T insert, uint offset, uint bits) {
  if (bits == 0) return base;
  unsigned long long mask = (bits >= 64 ? ~0ull : ((1ull << bits) - 1)) << offset;
  return T((detail::as_u64(base) & ~mask) | ((detail::as_u64(insert) << offset) & mask));
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
