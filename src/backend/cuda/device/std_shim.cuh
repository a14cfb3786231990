// The few <type_traits> names the shared element functors use, for NVRTC,
// which ships no C++ standard library (libcu++'s <cuda/std/type_traits>
// costs ~1.5 s of parse time per compile). Only ever included under NVRTC.
#pragma once

#if !defined(__CUDACC_RTC__)
#error "std_shim.cuh is for NVRTC only; host code uses <type_traits>"
#endif

namespace std {

template <class T, T V>
struct integral_constant {
  static constexpr T value = V;
  using value_type = T;
  using type = integral_constant;
  constexpr operator T() const { return V; }
  constexpr T operator()() const { return V; }
};
using true_type = integral_constant<bool, true>;
using false_type = integral_constant<bool, false>;

template <class A, class B> struct is_same : false_type {};
template <class A> struct is_same<A, A> : true_type {};
template <class A, class B> inline constexpr bool is_same_v = is_same<A, B>::value;

template <bool B, class T, class F> struct conditional { using type = T; };
template <class T, class F> struct conditional<false, T, F> { using type = F; };
template <bool B, class T, class F> using conditional_t = typename conditional<B, T, F>::type;

template <bool B, class T = void> struct enable_if {};
template <class T> struct enable_if<true, T> { using type = T; };
template <bool B, class T = void> using enable_if_t = typename enable_if<B, T>::type;

template <class T> struct remove_cv { using type = T; };
template <class T> struct remove_cv<const T> { using type = T; };
template <class T> struct remove_cv<volatile T> { using type = T; };
template <class T> struct remove_cv<const volatile T> { using type = T; };
template <class T> using remove_cv_t = typename remove_cv<T>::type;

// Integral types: bool, the character types and the standard integers.
template <class T> struct is_integral_base : false_type {};
#define ALLOY_STD_INTEGRAL(T) \
  template <> struct is_integral_base<T> : true_type {};
ALLOY_STD_INTEGRAL(bool)
ALLOY_STD_INTEGRAL(char)
ALLOY_STD_INTEGRAL(signed char)
ALLOY_STD_INTEGRAL(unsigned char)
ALLOY_STD_INTEGRAL(short)
ALLOY_STD_INTEGRAL(unsigned short)
ALLOY_STD_INTEGRAL(int)
ALLOY_STD_INTEGRAL(unsigned int)
ALLOY_STD_INTEGRAL(long)
ALLOY_STD_INTEGRAL(unsigned long)
ALLOY_STD_INTEGRAL(long long)
ALLOY_STD_INTEGRAL(unsigned long long)
#undef ALLOY_STD_INTEGRAL
template <class T> struct is_integral : is_integral_base<remove_cv_t<T>> {};
template <class T> inline constexpr bool is_integral_v = is_integral<T>::value;

template <class T> struct is_floating_point_base : false_type {};
template <> struct is_floating_point_base<float> : true_type {};
template <> struct is_floating_point_base<double> : true_type {};
template <> struct is_floating_point_base<long double> : true_type {};
template <class T> struct is_floating_point : is_floating_point_base<remove_cv_t<T>> {};
template <class T> inline constexpr bool is_floating_point_v = is_floating_point<T>::value;

template <class T>
struct is_arithmetic : integral_constant<bool, is_integral_v<T> || is_floating_point_v<T>> {};
template <class T> inline constexpr bool is_arithmetic_v = is_arithmetic<T>::value;

// As the standard: bool is unsigned; signed = arithmetic and T(-1) < T(0).
template <class T, bool = is_arithmetic_v<T>> struct is_signed_impl : false_type {};
template <class T> struct is_signed_impl<T, true> : integral_constant<bool, T(-1) < T(0)> {};
template <class T> struct is_signed : is_signed_impl<T> {};
template <class T> inline constexpr bool is_signed_v = is_signed<T>::value;
template <class T, bool = is_arithmetic_v<T>> struct is_unsigned_impl : false_type {};
template <class T> struct is_unsigned_impl<T, true> : integral_constant<bool, T(0) < T(-1)> {};
template <class T> struct is_unsigned : is_unsigned_impl<T> {};
template <class T> inline constexpr bool is_unsigned_v = is_unsigned<T>::value;

template <class T> struct make_unsigned { using type = T; };
template <> struct make_unsigned<char> { using type = unsigned char; };
template <> struct make_unsigned<signed char> { using type = unsigned char; };
template <> struct make_unsigned<short> { using type = unsigned short; };
template <> struct make_unsigned<int> { using type = unsigned int; };
template <> struct make_unsigned<long> { using type = unsigned long; };
template <> struct make_unsigned<long long> { using type = unsigned long long; };
template <class T> using make_unsigned_t = typename make_unsigned<T>::type;

}  // namespace std
