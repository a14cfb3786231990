// Shared by both targets (g++ for the CPU, NVRTC for CUDA): function qualifier,
// MSL scalar type names, bfloat, minimal type traits, as_type, numeric_limits
// and the MSL constants. No standard headers beyond <stdint.h>/<stddef.h>: this
// file is parsed on every kernel compile, so it stays small.
#pragma once

#if defined(__CUDACC__)
#define ALLOY_FUNC __device__ __forceinline__
#else
#define ALLOY_FUNC inline __attribute__((always_inline))
#endif

#if !defined(__CUDACC_RTC__)
#include <stddef.h>
#include <stdint.h>
#endif

#include "metal_integral.h"

namespace metal {

// ---- scalar type names MSL has and C++ lacks
typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned char uchar;
typedef unsigned long ulong;
#if !defined(__CUDACC__)
typedef _Float16 half;
#endif

// is_integral_impl: the integer types (bool included), metal_integral.h.

// bfloat: 16-bit storage, arithmetic through float, round to nearest even.
// bfloat op bfloat / integer -> bfloat; bfloat op float -> float (Metal's rule).
struct bfloat {
  uint16_t bits;

  bfloat() = default;
  template <class U, class = decltype(static_cast<float>(U()))>
  ALLOY_FUNC constexpr bfloat(U v) : bits(round_bits(static_cast<float>(v))) {}
  // Implicit to float/double and to the integer types, as Metal converts
  // scalars (`int i = bf;`, `idx[i] = bf;`); explicit to anything else
  // (half, vectors). With both directions implicit, `cond ? bf : 0` would be
  // ambiguous in C++ (int converts to bfloat and bfloat to int): the
  // translator gives every conditional whose arms are scalars of two types
  // Metal's common type (alloy_msl::cond_arm and cond_t below).
  template <class F>
    requires(requires(F* p) { static_cast<float*>(p); } || requires(F* p) { static_cast<double*>(p); })
  ALLOY_FUNC constexpr operator F() const {
    return F(__builtin_bit_cast(float, static_cast<uint32_t>(bits) << 16));
  }
  template <class I>
    requires(is_integral_impl<I>)
  ALLOY_FUNC constexpr operator I() const {
    return static_cast<I>(__builtin_bit_cast(float, static_cast<uint32_t>(bits) << 16));
  }
  template <class O>
    requires(!requires(O* p) { static_cast<float*>(p); } && !requires(O* p) { static_cast<double*>(p); } &&
             !is_integral_impl<O> && requires { static_cast<O>(0.0f); })
  ALLOY_FUNC constexpr explicit operator O() const {
    return static_cast<O>(__builtin_bit_cast(float, static_cast<uint32_t>(bits) << 16));
  }
  ALLOY_FUNC static constexpr bfloat from_bits(uint16_t b) {
    bfloat r{};
    r.bits = b;
    return r;
  }
  ALLOY_FUNC static constexpr uint16_t round_bits(float f) {
    uint32_t u = __builtin_bit_cast(uint32_t, f);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) return uint16_t((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return uint16_t(u >> 16);
  }
};

typedef half float16_t;
typedef bfloat bfloat16_t;

// ---- minimal type traits (metal_type_traits subset; also used below)
template <bool B, class T = void> struct enable_if {};
template <class T> struct enable_if<true, T> { typedef T type; };
template <bool B, class T = void> using enable_if_t = typename enable_if<B, T>::type;
template <bool B, class T, class F> struct conditional { typedef T type; };
template <class T, class F> struct conditional<false, T, F> { typedef F type; };
template <bool B, class T, class F> using conditional_t = typename conditional<B, T, F>::type;
template <class A, class B> inline constexpr bool is_same_v = false;
template <class A> inline constexpr bool is_same_v<A, A> = true;
template <class A, class B> struct is_same { static constexpr bool value = is_same_v<A, B>; };
template <class T> struct remove_cv { typedef T type; };
template <class T> struct remove_cv<const T> { typedef T type; };
template <class T> struct remove_cv<volatile T> { typedef T type; };
template <class T> struct remove_cv<const volatile T> { typedef T type; };
template <class T> using remove_cv_t = typename remove_cv<T>::type;
template <class T> struct remove_reference { typedef T type; };
template <class T> struct remove_reference<T&> { typedef T type; };
template <class T> struct remove_reference<T&&> { typedef T type; };
template <class T> using remove_reference_t = typename remove_reference<T>::type;
template <class T> using decay_scalar_t = remove_cv_t<remove_reference_t<T>>;

template <class T, T v> struct integral_constant {
  static constexpr T value = v;
  typedef T value_type;
  typedef integral_constant type;
  ALLOY_FUNC constexpr operator T() const { return v; }
  ALLOY_FUNC constexpr T operator()() const { return v; }
};
template <bool B> using bool_constant = integral_constant<bool, B>;
typedef bool_constant<true> true_type;
typedef bool_constant<false> false_type;
// The logical traits of Apple's metal_type_traits under their internal names
// (`_disjunction<is_same<T, int>, is_same<T, float>>::value`, which AIX's
// shader library reads under `#pragma METAL internals : enable`): the first
// trait whose value decides, as std::disjunction and std::conjunction.
template <class... B> struct _disjunction : false_type {};
template <class B> struct _disjunction<B> : B {};
template <class B, class... R> struct _disjunction<B, R...> : conditional<bool(B::value), B, _disjunction<R...>>::type {};
template <class... B> struct _conjunction : true_type {};
template <class B> struct _conjunction<B> : B {};
template <class B, class... R> struct _conjunction<B, R...> : conditional<bool(B::value), _conjunction<R...>, B>::type {};
template <class B> struct _negation : bool_constant<!bool(B::value)> {};
// Address spaces are dropped by the translation: nothing to remove.
template <class T> struct remove_addrspace { typedef T type; };
template <class T> using remove_addrspace_t = typename remove_addrspace<T>::type;

template <class T> inline constexpr bool is_floating_impl = false;
template <> inline constexpr bool is_floating_impl<half> = true;
template <> inline constexpr bool is_floating_impl<bfloat> = true;
template <> inline constexpr bool is_floating_impl<float> = true;
template <> inline constexpr bool is_floating_impl<double> = true;

template <class T> inline constexpr bool is_integral_v = is_integral_impl<remove_cv_t<T>>;
template <class T> inline constexpr bool is_floating_point_v = is_floating_impl<remove_cv_t<T>>;
template <class T> inline constexpr bool is_arithmetic_v = is_integral_v<T> || is_floating_point_v<T>;
template <class T> inline constexpr bool is_scalar_v = is_arithmetic_v<T>;
template <class T> inline constexpr bool is_signed_v = is_floating_point_v<T> || (is_integral_v<T> && T(-1) < T(0));
template <class T> inline constexpr bool is_unsigned_v = is_integral_v<T> && !is_signed_v<T>;
template <class T> struct is_integral { static constexpr bool value = is_integral_v<T>; };
template <class T> struct is_floating_point { static constexpr bool value = is_floating_point_v<T>; };
template <class T> struct is_arithmetic { static constexpr bool value = is_arithmetic_v<T>; };
template <class T> struct is_signed { static constexpr bool value = is_signed_v<T>; };
template <class T> struct is_unsigned { static constexpr bool value = is_unsigned_v<T>; };

template <class T> struct make_unsigned { typedef T type; };
template <> struct make_unsigned<char> { typedef unsigned char type; };
template <> struct make_unsigned<signed char> { typedef unsigned char type; };
template <> struct make_unsigned<short> { typedef unsigned short type; };
template <> struct make_unsigned<int> { typedef unsigned int type; };
template <> struct make_unsigned<long> { typedef unsigned long type; };
template <> struct make_unsigned<long long> { typedef unsigned long long type; };
template <class T> using make_unsigned_t = typename make_unsigned<T>::type;

// The scalar type a mixed expression computes in, by Metal's rules: double (a
// literal such as 0.5, which MSL reads as float) counts as float; a floating
// type beats an integer; half or bfloat with float is float.
template <class A, class B> struct metal_common { typedef decltype(A() + B()) type; };
template <class A> struct metal_common<A, A> { typedef A type; };
template <class A, class B>
  requires(is_same_v<A, double> != is_same_v<B, double>)
struct metal_common<A, B> {
  typedef conditional_t<is_same_v<A, double>, B, A> other;
  typedef typename metal_common<other, float>::type type;
};
template <class B> struct metal_common<bfloat, B> {
  typedef conditional_t<is_integral_v<B> || is_same_v<B, bfloat>, bfloat, float> type;
};
template <class A> struct metal_common<A, bfloat> { typedef typename metal_common<bfloat, A>::type type; };
template <> struct metal_common<bfloat, bfloat> { typedef bfloat type; };
template <> struct metal_common<bfloat, double> { typedef float type; };
template <> struct metal_common<double, bfloat> { typedef float type; };
template <class A, class B> using metal_common_t = typename metal_common<A, B>::type;

}  // namespace metal

namespace alloy_msl {
// The non-literal arm `a` of a conditional whose other arm is a literal of
// type Lit (`c ? a : 0.0f`, `c ? 1 : a`), converted to the type Metal gives
// the conditional: with a bfloat arm C++ finds no common type (each converts
// to the other), Metal uses its arithmetic rules. Other types pass through.
template <class Lit, class A>
ALLOY_FUNC constexpr decltype(auto) cond_arm(A&& a) {
  typedef ::metal::decay_scalar_t<A> D;
  if constexpr (::metal::is_arithmetic_v<D> && ::metal::is_arithmetic_v<Lit>)
    return static_cast<::metal::metal_common_t<D, Lit>>(a);
  else
    return static_cast<A&&>(a);
}

// An arm of a conditional with no literal arm, `c ? a : b`, is written
// `static_cast<cond_t<decltype((a)), decltype((b))>>(a)` (and b alike): where
// both arms are scalars of two types, Metal's common type (which C++ cannot
// find when half or bfloat converts to and from the other type implicitly);
// otherwise the arm's own type, its value category kept (`(c ? x : y) = v`).
// A cast rather than a call: `c ? f() : g()` may be void.
// (Member typedefs and a bool argument: NVRTC 13 crashed, SIGSEGV, on a
// form with defaulted template arguments testing is_arithmetic_v of a
// dependent Metal 4 tensor slice's type.)
template <bool Mixed, class X, class DX, class DY> struct cond_pick {
  typedef X type;
};
template <class X, class DX, class DY> struct cond_pick<true, X, DX, DY> {
  typedef ::metal::metal_common_t<DX, DY> type;
};
template <class X, class Y> struct cond_type {
  typedef ::metal::decay_scalar_t<X> DX;
  typedef ::metal::decay_scalar_t<Y> DY;
  typedef typename cond_pick<::metal::is_arithmetic_v<DX> && ::metal::is_arithmetic_v<DY> &&
                                 !::metal::is_same_v<DX, DY>,
                             X, DX, DY>::type type;
};
template <class X, class Y> using cond_t = typename cond_type<X, Y>::type;
// Declared only: a value of type T in the translator's copies of arms,
// which are operands of decltype (msl/conditionals.h).
template <class T> ALLOY_FUNC T cond_value();
// The type of `c ? a : b` as rewritten, X and Y its arms' decltype((...)).
template <class X, class Y>
using cond_result_t = decltype(true ? static_cast<cond_t<X, Y>>(cond_value<X>())
                                    : static_cast<cond_t<Y, X>>(cond_value<Y>()));

// The literal arm `l` of a conditional whose other arm `a` is not one
// (`c ? a : 0`), written `::alloy_msl::cond_lit<decltype((a))>(l)`: Metal's
// common type where `a` is a scalar (with the other arm's cond_arm, both
// arms have it); where `a` is a pointer or an array, or a class that takes a
// null pointer and not the literal, nullptr (the literal, which can only be
// 0 there, was a null pointer constant); otherwise the literal as it is.
// (Pointers with any qualifiers, g++'s __restrict__ too, and arrays.)
template <class T>
inline constexpr bool is_pointer_like = requires(T p) { static_cast<const volatile void*>(p); };
template <class Other, class L>
ALLOY_FUNC constexpr auto cond_lit(L v) {
  typedef ::metal::decay_scalar_t<Other> O;
  if constexpr (::metal::is_arithmetic_v<O>)
    return static_cast<::metal::metal_common_t<O, L>>(v);
  else if constexpr (is_pointer_like<O>)
    return nullptr;
  else if constexpr (requires { O(nullptr); } && !requires { O(v); })
    return nullptr;
  else
    return v;
}
// The type of `c ? a : l` (or `c ? l : a`) as rewritten, X being
// decltype((a)) and L the literal's type.
template <class X, class L>
using cond_lit_result_t = decltype(true ? cond_arm<L>(cond_value<X>()) : cond_lit<X>(cond_value<L>()));
}  // namespace alloy_msl

namespace metal {

// ---- bfloat arithmetic (templates constrained to scalars so vectors never match)
#define ALLOY_BF_BINOP(op)                                                                  \
  ALLOY_FUNC bfloat operator op(bfloat a, bfloat b) { return bfloat(float(a) op float(b)); } \
  template <class U, enable_if_t<is_arithmetic_v<U>, int> = 0>                             \
  ALLOY_FUNC metal_common_t<bfloat, U> operator op(bfloat a, U b) {                        \
    typedef metal_common_t<bfloat, U> R;                                                    \
    typedef conditional_t<is_same_v<R, bfloat>, float, R> C;                                \
    return R(C(a) op C(b));                                                                 \
  }                                                                                         \
  template <class U, enable_if_t<is_arithmetic_v<U>, int> = 0>                             \
  ALLOY_FUNC metal_common_t<bfloat, U> operator op(U a, bfloat b) {                        \
    typedef metal_common_t<bfloat, U> R;                                                    \
    typedef conditional_t<is_same_v<R, bfloat>, float, R> C;                                \
    return R(C(a) op C(b));                                                                 \
  }                                                                                         \
  template <class U, enable_if_t<is_arithmetic_v<U>, int> = 0>                             \
  ALLOY_FUNC bfloat& operator op##=(bfloat & a, U b) { return a = bfloat(float(a) op float(b)); } \
  /* `float acc += bfloat`: in the common type, as `acc = acc op b` (a class type, */       \
  /* CUDA's half, has its own) */                                                           \
  template <class U, enable_if_t<is_arithmetic_v<U> && !__is_class(U), int> = 0>          \
  ALLOY_FUNC U& operator op##=(U & a, bfloat b) { return a = U(a op b); }
ALLOY_BF_BINOP(+)
ALLOY_BF_BINOP(-)
ALLOY_BF_BINOP(*)
ALLOY_BF_BINOP(/)
#undef ALLOY_BF_BINOP
#define ALLOY_BF_CMP(op)                                                              \
  ALLOY_FUNC bool operator op(bfloat a, bfloat b) { return float(a) op float(b); }   \
  template <class U, enable_if_t<is_arithmetic_v<U>, int> = 0>                       \
  ALLOY_FUNC bool operator op(bfloat a, U b) { return float(a) op b; }               \
  template <class U, enable_if_t<is_arithmetic_v<U>, int> = 0>                       \
  ALLOY_FUNC bool operator op(U a, bfloat b) { return a op float(b); }
ALLOY_BF_CMP(==)
ALLOY_BF_CMP(!=)
ALLOY_BF_CMP(<)
ALLOY_BF_CMP(<=)
ALLOY_BF_CMP(>)
ALLOY_BF_CMP(>=)
#undef ALLOY_BF_CMP
ALLOY_FUNC bfloat operator-(bfloat a) { return bfloat::from_bits(uint16_t(a.bits ^ 0x8000u)); }
ALLOY_FUNC bfloat operator+(bfloat a) { return a; }
ALLOY_FUNC bfloat& operator++(bfloat& a) { return a = bfloat(float(a) + 1.0f); }
ALLOY_FUNC bfloat& operator--(bfloat& a) { return a = bfloat(float(a) - 1.0f); }
ALLOY_FUNC bfloat operator++(bfloat& a, int) { bfloat o = a; ++a; return o; }
ALLOY_FUNC bfloat operator--(bfloat& a, int) { bfloat o = a; --a; return o; }

// ---- as_type: reinterpret the bits of a value of the same size
template <class To, class From>
ALLOY_FUNC constexpr To as_type(const From& v) {
  static_assert(sizeof(To) == sizeof(From), "as_type: source and destination sizes differ");
  return __builtin_bit_cast(To, v);
}

// ---- numeric_limits
template <class T> struct numeric_limits;
template <class T, T Lo, T Hi, int Digits> struct integer_limits {
  static constexpr bool is_specialized = true, is_integer = true, is_exact = true;
  static constexpr bool is_signed = Lo != 0, has_infinity = false, has_quiet_NaN = false;
  static constexpr int digits = Digits;
  ALLOY_FUNC static constexpr T min() { return Lo; }
  ALLOY_FUNC static constexpr T max() { return Hi; }
  ALLOY_FUNC static constexpr T lowest() { return Lo; }
  ALLOY_FUNC static constexpr T epsilon() { return 0; }
};
template <> struct numeric_limits<bool> : integer_limits<bool, false, true, 1> {};
template <> struct numeric_limits<char> : integer_limits<char, char(-128), char(127), 7> {};
template <> struct numeric_limits<signed char> : integer_limits<signed char, -128, 127, 7> {};
template <> struct numeric_limits<unsigned char> : integer_limits<unsigned char, 0, 255, 8> {};
template <> struct numeric_limits<short> : integer_limits<short, -32768, 32767, 15> {};
template <> struct numeric_limits<unsigned short> : integer_limits<unsigned short, 0, 65535, 16> {};
template <> struct numeric_limits<int> : integer_limits<int, -2147483647 - 1, 2147483647, 31> {};
template <> struct numeric_limits<unsigned int> : integer_limits<unsigned int, 0, 4294967295u, 32> {};
template <> struct numeric_limits<long> : integer_limits<long, -9223372036854775807l - 1, 9223372036854775807l, 63> {};
template <> struct numeric_limits<unsigned long> : integer_limits<unsigned long, 0, 18446744073709551615ul, 64> {};
template <> struct numeric_limits<long long> : integer_limits<long long, -9223372036854775807ll - 1, 9223372036854775807ll, 63> {};
template <> struct numeric_limits<unsigned long long> : integer_limits<unsigned long long, 0, 18446744073709551615ull, 64> {};

template <class T, uint32_t MaxBits, uint32_t MinBits, uint32_t EpsBits, uint32_t InfBits, uint32_t NanBits, uint32_t DenormBits,
          int Digits>
struct float_limits {
  // Bits are given as the float whose value the type's limit equals (exact for half/bfloat).
  static constexpr bool is_specialized = true, is_integer = false, is_exact = false;
  static constexpr bool is_signed = true, has_infinity = true, has_quiet_NaN = true;
  static constexpr int digits = Digits;
  ALLOY_FUNC static constexpr T max() { return T(__builtin_bit_cast(float, MaxBits)); }
  ALLOY_FUNC static constexpr T min() { return T(__builtin_bit_cast(float, MinBits)); }
  ALLOY_FUNC static constexpr T lowest() { return T(-__builtin_bit_cast(float, MaxBits)); }
  ALLOY_FUNC static constexpr T epsilon() { return T(__builtin_bit_cast(float, EpsBits)); }
  ALLOY_FUNC static constexpr T infinity() { return T(__builtin_bit_cast(float, InfBits)); }
  ALLOY_FUNC static constexpr T quiet_NaN() { return T(__builtin_bit_cast(float, NanBits)); }
  ALLOY_FUNC static constexpr T signaling_NaN() { return quiet_NaN(); }
  ALLOY_FUNC static constexpr T denorm_min() { return T(__builtin_bit_cast(float, DenormBits)); }
};
template <> struct numeric_limits<float>
    : float_limits<float, 0x7f7fffffu, 0x00800000u, 0x34000000u, 0x7f800000u, 0x7fc00000u, 0x00000001u, 24> {};
// half: max 65504, min 2^-14, eps 2^-10, denorm 2^-24
template <> struct numeric_limits<half>
    : float_limits<half, 0x477fe000u, 0x38800000u, 0x3a800000u, 0x7f800000u, 0x7fc00000u, 0x33800000u, 11> {};
// bfloat: max 0x7f7f0000, min 2^-126, eps 2^-7, denorm 2^-133
template <> struct numeric_limits<bfloat>
    : float_limits<bfloat, 0x7f7f0000u, 0x00800000u, 0x3c000000u, 0x7f800000u, 0x7fc00000u, 0x00010000u, 8> {};
template <class T> struct numeric_limits<const T> : numeric_limits<T> {};

// MSL 3.2's memory scopes (atomic_thread_fence's third argument).
enum class thread_scope { thread_scope_thread, thread_scope_simdgroup, thread_scope_threadgroup, thread_scope_device };
using thread_scope::thread_scope_device;
using thread_scope::thread_scope_simdgroup;
using thread_scope::thread_scope_thread;
using thread_scope::thread_scope_threadgroup;

// uniform<T>: a value the same in every thread (a hint to Apple's compiler,
// which MLX's GEMV and NAX kernels give); here the value itself.
template <class T> using uniform = T;
template <class T> ALLOY_FUNC constexpr T make_uniform(T x) { return x; }

// <metal_array>'s array (also a tensor's strides argument).
template <class T, size_t N> struct array {
  T elems_[N];
  ALLOY_FUNC constexpr T& operator[](size_t i) { return elems_[i]; }
  ALLOY_FUNC constexpr const T& operator[](size_t i) const { return elems_[i]; }
  ALLOY_FUNC static constexpr size_t size() { return N; }
  ALLOY_FUNC constexpr T* begin() { return elems_; }
  ALLOY_FUNC constexpr T* end() { return elems_ + N; }
  ALLOY_FUNC constexpr const T* begin() const { return elems_; }
  ALLOY_FUNC constexpr const T* end() const { return elems_ + N; }
};

}  // namespace metal

// ---- MSL constants (macros, as in metal_stdlib)
// Spelled through __builtin_bit_cast, which both compilers have: NVRTC knows
// no __builtin_inff/__builtin_nanf/__builtin_huge_valf. A host header may
// have defined the C ones already, with the same values.
#ifndef INFINITY
#define INFINITY (__builtin_bit_cast(float, 0x7f800000u))
#endif
#ifndef NAN
#define NAN (__builtin_bit_cast(float, 0x7fc00000u))
#endif
#ifndef HUGE_VALF
#define HUGE_VALF (__builtin_bit_cast(float, 0x7f800000u))
#endif
#ifndef HUGE_VALH
#define HUGE_VALH (::metal::half(__builtin_bit_cast(float, 0x7f800000u)))
#endif
#define MAXHALF (::metal::half(65504.0f))
// <float.h>, when a host header includes it first, has these (same values).
#ifndef FLT_RADIX
#define FLT_MAX_10_EXP 38
#define FLT_MIN_10_EXP (-37)
#define FLT_RADIX 2
#endif
#define HALF_DIG 3
#define HALF_MANT_DIG 11
#define HALF_MAX_10_EXP 4
#define HALF_MAX_EXP 16
#define HALF_MIN_10_EXP (-4)
#define HALF_MIN_EXP (-13)
#define HALF_RADIX 2
// Integer limits (MSL has them without an include); guarded, since a host
// header may define them first, with the same values.
#ifndef CHAR_BIT
#define CHAR_BIT 8
#define SCHAR_MAX 127
#define SCHAR_MIN (-128)
#define UCHAR_MAX 255
#define CHAR_MAX SCHAR_MAX
#define CHAR_MIN SCHAR_MIN
#define USHRT_MAX 65535
#define SHRT_MAX 32767
#define SHRT_MIN (-32768)
#define UINT_MAX 0xffffffffu
#define INT_MAX 2147483647
#define INT_MIN (-2147483647 - 1)
#define ULONG_MAX 0xfffffffffffffffful
#define LONG_MAX 0x7fffffffffffffffl
#define LONG_MIN (-0x7fffffffffffffffl - 1)
#endif
#define MAXFLOAT 0x1.fffffep+127f
#ifndef FLT_MAX  // (as FLT_RADIX above)
#define FLT_MAX 0x1.fffffep+127f
#define FLT_MIN 0x1p-126f
#define FLT_EPSILON 0x1p-23f
#define FLT_DIG 6
#define FLT_MANT_DIG 24
#define FLT_MAX_EXP 128
#define FLT_MIN_EXP (-125)
#endif
#define HALF_MAX (::metal::half(65504.0f))
#define HALF_MIN (::metal::half(0x1p-14f))
#define HALF_EPSILON (::metal::half(0x1p-10f))
#define M_E_F 2.71828182845904523536f
#define M_LOG2E_F 1.44269504088896340736f
#define M_LOG10E_F 0.434294481903251827651f
#define M_LN2_F 0.693147180559945309417f
#define M_LN10_F 2.30258509299404568402f
#define M_PI_F 3.14159265358979323846f
#define M_PI_2_F 1.57079632679489661923f
#define M_PI_4_F 0.785398163397448309616f
#define M_1_PI_F 0.318309886183790671538f
#define M_2_PI_F 0.636619772367581343076f
#define M_2_SQRTPI_F 1.12837916709551257390f
#define M_SQRT2_F 1.41421356237309504880f
#define M_SQRT1_2_F 0.707106781186547524401f
#define M_E_H (::metal::half(M_E_F))
#define M_LOG2E_H (::metal::half(M_LOG2E_F))
#define M_LOG10E_H (::metal::half(M_LOG10E_F))
#define M_LN2_H (::metal::half(M_LN2_F))
#define M_LN10_H (::metal::half(M_LN10_F))
#define M_PI_H (::metal::half(M_PI_F))
#define M_PI_2_H (::metal::half(M_PI_2_F))
#define M_PI_4_H (::metal::half(M_PI_4_F))
#define M_1_PI_H (::metal::half(M_1_PI_F))
#define M_2_PI_H (::metal::half(M_2_PI_F))
#define M_2_SQRTPI_H (::metal::half(M_2_SQRTPI_F))
#define M_SQRT2_H (::metal::half(M_SQRT2_F))
#define M_SQRT1_2_H (::metal::half(M_SQRT1_2_F))

// ---- `a[i, j]`: the translator's spelling of a subscript with several
// indices (Metal 4 tensors, metal_tensor.h). Under a pointer or an array it
// is what the comma operator gives, the last index.
namespace alloy_msl {
template <size_t... K> struct index_seq {};
template <size_t N, size_t... K> struct make_index_seq : make_index_seq<N - 1, N - 1, K...> {};
template <size_t... K> struct make_index_seq<0, K...> { typedef index_seq<K...> type; };

// The indices of `t[i, j, ...]`. Under a pointer or an array the subscript
// is what the comma operator gives, the last index.
template <class... I> struct subscript_pack {
  long v[sizeof...(I)];
  typedef typename make_index_seq<sizeof...(I)>::type seq;
  template <size_t K> ALLOY_FUNC long get() const { return v[K]; }
  ALLOY_FUNC operator long() const { return v[sizeof...(I) - 1]; }
};
template <class I> ALLOY_FUNC I subscript(I i) { return i; }
template <class I0, class I1, class... I> ALLOY_FUNC subscript_pack<I0, I1, I...> subscript(I0 i0, I1 i1, I... is) {
  return {{long(i0), long(i1), long(is)...}};
}
}  // namespace alloy_msl
