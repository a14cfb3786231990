// The integer types (bool included) as one list, for both targets: bfloat's
// and (on CUDA) half's conversions, and the type traits of metal_base.h.
// Its own header because the CUDA target includes cuda_half.h, which needs
// the list, before metal_base.h.
#pragma once

namespace metal {
template <class T> inline constexpr bool is_integral_impl = false;
#define ALLOY_INTEGRAL(T) template <> inline constexpr bool is_integral_impl<T> = true;
ALLOY_INTEGRAL(bool)
ALLOY_INTEGRAL(char)
ALLOY_INTEGRAL(signed char)
ALLOY_INTEGRAL(unsigned char)
ALLOY_INTEGRAL(short)
ALLOY_INTEGRAL(unsigned short)
ALLOY_INTEGRAL(int)
ALLOY_INTEGRAL(unsigned int)
ALLOY_INTEGRAL(long)
ALLOY_INTEGRAL(unsigned long)
ALLOY_INTEGRAL(long long)
ALLOY_INTEGRAL(unsigned long long)
#undef ALLOY_INTEGRAL
}  // namespace metal
