// The one ordering every sort uses, on the host and in NVRTC kernels, so the
// CPU and CUDA backends place NaNs and ties identically (as MLX):
//   ascending; a NaN (complex: a NaN in either part) after every number and
//   equal to every other NaN; complex numbers by real part, then imaginary
//   part; -0.0 equal to 0.0. Ties keep their input order: the CPU sorts
//   stably, the CUDA kernels break ties by position.
#pragma once

#include "backend/common/math_shim.h"

namespace alloy::sorting {

// Whether `a` goes strictly before `b`. A strict weak order for every dtype.
template <typename T>
ALLOY_HD inline bool less(T a, T b) {
  if constexpr (math::is_complex_v<T>) {
    const bool a_nan = math::isnan(a), b_nan = math::isnan(b);
    if (a_nan || b_nan) return !a_nan;
    return a.real() < b.real() || (a.real() == b.real() && a.imag() < b.imag());
  } else {
    // 16-bit floats compare as float (their own types have no NaN test).
    using C = math::compute_t<T>;
    const C x = static_cast<C>(a), y = static_cast<C>(b);
    const bool x_nan = math::isnan(x), y_nan = math::isnan(y);
    if (x_nan || y_nan) return !x_nan;
    return x < y;
  }
}

}  // namespace alloy::sorting
