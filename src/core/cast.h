// Value conversion between any two dtypes' C++ types (complex and bfloat16
// need care that a plain static_cast does not give).
#pragma once

#include <complex>
#include <type_traits>

#include "alloy/dtype.h"

namespace alloy {

template <typename T>
struct is_complex_t : std::false_type {};
template <typename T>
struct is_complex_t<std::complex<T>> : std::true_type {};

template <typename To, typename From>
inline To cast_value(const From& v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (is_complex_t<From>::value) {
    if constexpr (is_complex_t<To>::value) {
      return To(v);
    } else if constexpr (std::is_same_v<To, bool>) {
      return v != From(0);
    } else {
      return cast_value<To>(v.real());
    }
  } else if constexpr (is_complex_t<To>::value) {
    return To(static_cast<float>(v), 0.0f);
  } else if constexpr (std::is_same_v<From, bfloat16_t>) {
    return cast_value<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bfloat16_t>) {
    return bfloat16_t(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_same_v<From, float16_t> && std::is_integral_v<To>) {
    return static_cast<To>(static_cast<float>(v));
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace alloy
