// Shared by both targets: the rest of the metal:: math library, split from
// metal_math.h because a first compile parses every line it includes and few
// kernels use these: functions with an output argument, relational,
// geometric and integer functions. The translator includes this header only
// when a kernel names one of them (src/msl/features.cpp); metal_cuda.h and
// metal_cpu.h include it for hand-written kernels.
#pragma once

#include "metal_math.h"  // ALLOY_FMATH, detail:: helpers

namespace metal {

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
// The same per component: frexp(float4, int4&), ldexp(float4, int4), ...
template <class T, int N> ALLOY_FUNC vec<T, N> frexp(const vec<T, N>& x, vec<int, N>& e) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r.at(i) = frexp(x.at(i), e.at(i));
  return r;
}
template <class T, int N> ALLOY_FUNC vec<T, N> ldexp(const vec<T, N>& x, const vec<int, N>& e) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r.at(i) = ldexp(x.at(i), e.at(i));
  return r;
}
template <class T, int N> ALLOY_FUNC vec<T, N> modf(const vec<T, N>& x, vec<T, N>& ip) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r.at(i) = modf(x.at(i), ip.at(i));
  return r;
}
template <class T, int N> ALLOY_FUNC vec<T, N> sincos(const vec<T, N>& x, vec<T, N>& c) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r.at(i) = sincos(x.at(i), c.at(i));
  return r;
}
template <class T, int N> ALLOY_FUNC vec<int, N> ilogb(const vec<T, N>& x) {
  vec<int, N> r;
  for (int i = 0; i < N; ++i) r.at(i) = ilogb(x.at(i));
  return r;
}

// ---- relational
template <class T, enable_if_t<is_arithmetic_v<T>, int> = 0> ALLOY_FUNC bool isnan(T x) { return float(x) != float(x); }
template <class T, enable_if_t<is_arithmetic_v<T>, int> = 0> ALLOY_FUNC bool isinf(T x) {
  return ALLOY_FMATH(fabs)(float(x)) == numeric_limits<float>::infinity();
}
template <class T, enable_if_t<is_arithmetic_v<T>, int> = 0> ALLOY_FUNC bool isfinite(T x) {
  return ALLOY_FMATH(fabs)(float(x)) < numeric_limits<float>::infinity();
}
template <class T, enable_if_t<is_arithmetic_v<T>, int> = 0> ALLOY_FUNC bool isnormal(T x) {
  float a = ALLOY_FMATH(fabs)(float(x));
  return a >= float(numeric_limits<T>::min()) && a < numeric_limits<float>::infinity();
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
template <class A, class B, enable_if_t<is_arithmetic_v<A> && is_arithmetic_v<B>, int> = 0>
ALLOY_FUNC bool isordered(A x, B y) {
  return !isnan(x) && !isnan(y);
}
template <class A, class B, enable_if_t<is_arithmetic_v<A> && is_arithmetic_v<B>, int> = 0>
ALLOY_FUNC bool isunordered(A x, B y) {
  return !isordered(x, y);
}
template <class T, int N> ALLOY_FUNC vec<bool, N> isordered(const vec<T, N>& x, const vec<T, N>& y) {
  vec<bool, N> r;
  for (int i = 0; i < N; ++i) r.at(i) = isordered(x.at(i), y.at(i));
  return r;
}
template <class T, int N> ALLOY_FUNC vec<bool, N> isunordered(const vec<T, N>& x, const vec<T, N>& y) {
  return !isordered(x, y);
}
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
// n if the surface faces away from the incident vector (dot(nref, i) < 0), else -n.
template <class T, int N>
ALLOY_FUNC vec<T, N> faceforward(const vec<T, N>& n, const vec<T, N>& i, const vec<T, N>& nref) {
  return dot(nref, i) < T(0) ? n : -n;
}
template <class T, int N> ALLOY_FUNC vec<T, N> reflect(const vec<T, N>& i, const vec<T, N>& n) {
  return i - T(2) * dot(n, i) * n;
}
// Zero on total internal reflection.
template <class T, int N> ALLOY_FUNC vec<T, N> refract(const vec<T, N>& i, const vec<T, N>& n, T eta) {
  const float d = float(dot(n, i)), e = float(eta);
  const float k = 1.0f - e * e * (1.0f - d * d);
  if (k < 0.0f) return vec<T, N>(T(0));
  return vec<T, N>(T(e)) * i - vec<T, N>(T(e * d + ALLOY_FMATH(sqrt)(k))) * n;
}

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
// Bit counts of a 64-bit word: the device's intrinsics under CUDA, whose
// compilers lack the __builtin_ forms.
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
ALLOY_FUNC int popcount64(unsigned long long u) { return __popcll(u); }
ALLOY_FUNC int clz64(unsigned long long u) { return __clzll(static_cast<long long>(u)); }
ALLOY_FUNC int ctz64(unsigned long long u) { return __ffsll(static_cast<long long>(u)) - 1; }
#else
ALLOY_FUNC int popcount64(unsigned long long u) { return __builtin_popcountll(u); }
ALLOY_FUNC int clz64(unsigned long long u) { return __builtin_clzll(u); }
ALLOY_FUNC int ctz64(unsigned long long u) { return __builtin_ctzll(u); }
#endif
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
ALLOY_INT1(popcount, detail::popcount64(u))
ALLOY_INT1(clz, u == 0 ? B : detail::clz64(u) - (64 - B))
ALLOY_INT1(ctz, u == 0 ? B : detail::ctz64(u))
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
// a * b + c, saturated to T (a 64-bit unsigned product needs the unsigned
// 128-bit type; the signed one holds every other exactly).
template <class T, enable_if_t<is_integral_v<T>, int> = 0> ALLOY_FUNC T madsat(T a, T b, T c) {
  if constexpr (sizeof(T) == 8 && !is_signed_v<T>) {
    const unsigned __int128 r = static_cast<unsigned __int128>(a) * b + c;
    return r > static_cast<unsigned __int128>(T(~T(0))) ? T(~T(0)) : T(r);
  } else {
    return detail::saturate_wide<T>(static_cast<__int128>(a) * static_cast<__int128>(b) + static_cast<__int128>(c));
  }
}
#define ALLOY_INT3(name)                                                                        \
  template <class T, int N>                                                                     \
  ALLOY_FUNC vec<T, N> name(const vec<T, N>& a, const vec<T, N>& b, const vec<T, N>& c) {       \
    vec<T, N> r;                                                                                \
    for (int i = 0; i < N; ++i) r.at(i) = name(a.at(i), b.at(i), c.at(i));                      \
    return r;                                                                                   \
  }
ALLOY_INT3(madhi)
ALLOY_INT3(mad24)
ALLOY_INT3(madsat)
#undef ALLOY_INT3
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
template <class T, int N> ALLOY_FUNC vec<T, N> extract_bits(vec<T, N> x, uint offset, uint bits) {
  for (int i = 0; i < N; ++i) x.at(i) = extract_bits(x.at(i), offset, bits);
  return x;
}
template <class T, int N>
ALLOY_FUNC vec<T, N> insert_bits(vec<T, N> base, const vec<T, N>& insert, uint offset, uint bits) {
  for (int i = 0; i < N; ++i) base.at(i) = insert_bits(base.at(i), insert.at(i), offset, bits);
  return base;
}

// ---- pack / unpack: normalized components, the first in the lowest bits;
// packing clamps and rounds to nearest even, unpacking of signed forms
// clamps the most negative code to -1.
namespace detail {
template <int Bits, bool Signed> ALLOY_FUNC uint pack_norm(float x) {
  constexpr float top = float((1u << (Signed ? Bits - 1 : Bits)) - 1u);
  const float c = ALLOY_FMATH(fmin)(ALLOY_FMATH(fmax)(x, Signed ? -1.0f : 0.0f), 1.0f);
  return uint(int(ALLOY_FMATH(rint)(c * top))) & ((1u << Bits) - 1u);
}
template <int Bits, bool Signed> ALLOY_FUNC float unpack_norm(uint word, int shift) {
  constexpr float top = float((1u << (Signed ? Bits - 1 : Bits)) - 1u);
  const uint code = (word >> shift) & ((1u << Bits) - 1u);
  if constexpr (Signed) {
    const int v = int(code << (32 - Bits)) >> (32 - Bits);  // sign-extended
    return ALLOY_FMATH(fmax)(float(v) / top, -1.0f);
  } else {
    return float(code) / top;
  }
}
template <int Bits, bool Signed, class V> ALLOY_FUNC uint pack_lanes(const V& v) {
  uint r = 0;
  for (int i = 0; i < vec_traits<V>::n; ++i) r |= pack_norm<Bits, Signed>(float(v.at(i))) << (i * Bits);
  return r;
}
template <class E, int N, int Bits, bool Signed> ALLOY_FUNC vec<E, N> unpack_lanes(uint word) {
  vec<E, N> r;
  for (int i = 0; i < N; ++i) r.at(i) = E(unpack_norm<Bits, Signed>(word, i * Bits));
  return r;
}
ALLOY_FUNC uint pack_10a2(const vec<float, 4>& v) {
  return pack_norm<10, false>(v.x) | (pack_norm<10, false>(v.y) << 10) | (pack_norm<10, false>(v.z) << 20) |
         (pack_norm<2, false>(v.w) << 30);
}
template <class E> ALLOY_FUNC vec<E, 4> unpack_10a2(uint w) {
  return vec<E, 4>(E(unpack_norm<10, false>(w, 0)), E(unpack_norm<10, false>(w, 10)), E(unpack_norm<10, false>(w, 20)),
                   E(unpack_norm<2, false>(w, 30)));
}
// 565: x in bits 0-4, y in bits 5-10, z in bits 11-15 (the spec gives the
// signatures and the rounding, not the order; MoltenVK's BC1 decoder and
// umbra's golden tests read Apple's as this, B5G6R5 with x the blue field).
ALLOY_FUNC ushort pack_565(const vec<float, 3>& v) {
  return ushort(pack_norm<5, false>(v.x) | (pack_norm<6, false>(v.y) << 5) | (pack_norm<5, false>(v.z) << 11));
}
template <class E> ALLOY_FUNC vec<E, 3> unpack_565(uint w) {
  return vec<E, 3>(E(unpack_norm<5, false>(w, 0)), E(unpack_norm<6, false>(w, 5)), E(unpack_norm<5, false>(w, 11)));
}
// sRGB's transfer function and its inverse; alpha (the fourth component) stays linear.
ALLOY_FUNC float srgb_to_linear(float c) {
  return c <= 0.04045f ? c / 12.92f : ALLOY_FMATH(pow)((c + 0.055f) / 1.055f, 2.4f);
}
ALLOY_FUNC float linear_to_srgb(float l) {
  l = ALLOY_FMATH(fmin)(ALLOY_FMATH(fmax)(l, 0.0f), 1.0f);
  return l <= 0.0031308f ? l * 12.92f : 1.055f * ALLOY_FMATH(pow)(l, 1.0f / 2.4f) - 0.055f;
}
template <class E> ALLOY_FUNC vec<E, 4> unpack_srgb(uint w) {
  const vec<float, 4> u = unpack_lanes<float, 4, 8, false>(w);
  return vec<E, 4>(E(srgb_to_linear(u.x)), E(srgb_to_linear(u.y)), E(srgb_to_linear(u.z)), E(u.w));
}
}  // namespace detail
ALLOY_FUNC uint pack_float_to_srgb_unorm4x8(vec<float, 4> v) {
  return detail::pack_lanes<8, false>(vec<float, 4>(detail::linear_to_srgb(v.x), detail::linear_to_srgb(v.y),
                                                    detail::linear_to_srgb(v.z), v.w));
}
ALLOY_FUNC uint pack_half_to_srgb_unorm4x8(vec<half, 4> v) { return pack_float_to_srgb_unorm4x8(vec<float, 4>(v)); }
ALLOY_FUNC vec<float, 4> unpack_unorm4x8_srgb_to_float(uint w) { return detail::unpack_srgb<float>(w); }
ALLOY_FUNC vec<half, 4> unpack_unorm4x8_srgb_to_half(uint w) { return detail::unpack_srgb<half>(w); }
ALLOY_FUNC uint pack_float_to_unorm4x8(vec<float, 4> v) { return detail::pack_lanes<8, false>(v); }
ALLOY_FUNC uint pack_float_to_snorm4x8(vec<float, 4> v) { return detail::pack_lanes<8, true>(v); }
ALLOY_FUNC uint pack_float_to_unorm2x16(vec<float, 2> v) { return detail::pack_lanes<16, false>(v); }
ALLOY_FUNC uint pack_float_to_snorm2x16(vec<float, 2> v) { return detail::pack_lanes<16, true>(v); }
ALLOY_FUNC uint pack_float_to_unorm10a2(vec<float, 4> v) { return detail::pack_10a2(v); }
ALLOY_FUNC ushort pack_float_to_unorm565(vec<float, 3> v) { return detail::pack_565(v); }
ALLOY_FUNC ushort pack_half_to_unorm565(vec<half, 3> v) { return detail::pack_565(vec<float, 3>(v)); }
ALLOY_FUNC vec<float, 3> unpack_unorm565_to_float(ushort w) { return detail::unpack_565<float>(w); }
ALLOY_FUNC vec<half, 3> unpack_unorm565_to_half(ushort w) { return detail::unpack_565<half>(w); }
ALLOY_FUNC uint pack_half_to_unorm4x8(vec<half, 4> v) { return detail::pack_lanes<8, false>(v); }
ALLOY_FUNC uint pack_half_to_snorm4x8(vec<half, 4> v) { return detail::pack_lanes<8, true>(v); }
ALLOY_FUNC uint pack_half_to_unorm2x16(vec<half, 2> v) { return detail::pack_lanes<16, false>(v); }
ALLOY_FUNC uint pack_half_to_snorm2x16(vec<half, 2> v) { return detail::pack_lanes<16, true>(v); }
ALLOY_FUNC uint pack_half_to_unorm10a2(vec<half, 4> v) { return detail::pack_10a2(vec<float, 4>(v)); }
ALLOY_FUNC vec<float, 4> unpack_unorm4x8_to_float(uint w) { return detail::unpack_lanes<float, 4, 8, false>(w); }
ALLOY_FUNC vec<float, 4> unpack_snorm4x8_to_float(uint w) { return detail::unpack_lanes<float, 4, 8, true>(w); }
ALLOY_FUNC vec<float, 2> unpack_unorm2x16_to_float(uint w) { return detail::unpack_lanes<float, 2, 16, false>(w); }
ALLOY_FUNC vec<float, 2> unpack_snorm2x16_to_float(uint w) { return detail::unpack_lanes<float, 2, 16, true>(w); }
ALLOY_FUNC vec<float, 4> unpack_unorm10a2_to_float(uint w) { return detail::unpack_10a2<float>(w); }
ALLOY_FUNC vec<half, 4> unpack_unorm4x8_to_half(uint w) { return detail::unpack_lanes<half, 4, 8, false>(w); }
ALLOY_FUNC vec<half, 4> unpack_snorm4x8_to_half(uint w) { return detail::unpack_lanes<half, 4, 8, true>(w); }
ALLOY_FUNC vec<half, 2> unpack_unorm2x16_to_half(uint w) { return detail::unpack_lanes<half, 2, 16, false>(w); }
ALLOY_FUNC vec<half, 2> unpack_snorm2x16_to_half(uint w) { return detail::unpack_lanes<half, 2, 16, true>(w); }
ALLOY_FUNC vec<half, 4> unpack_unorm10a2_to_half(uint w) { return detail::unpack_10a2<half>(w); }

}  // namespace metal
