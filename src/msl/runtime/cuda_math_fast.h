// CUDA target: metal::fast:: on the hardware's approximate instructions.
// metal:: itself (metal_math.h) calls CUDA's accurate float functions, which
// `--use_fast_math` (math_mode "fast") turns into these same intrinsics.
// Bounds (CUDA programming guide vs Metal's fast-math table): __expf
// 2 + floor(|1.173x|) ulp (Metal allows 3 + floor(|2x|)); __log2f 2^-22
// absolute on [0.5, 2] (Metal 2^-22); __sinf/__cosf 2^-21.41 absolute on
// [-pi, pi] (Metal 2^-13). Like __expf, exp2 flushes subnormal inputs and
// results to zero (ex2.approx.ftz: one instruction, where the subnormal-
// preserving form costs four), as fast math may.
#pragma once

namespace metal {
namespace fast {

namespace detail {
ALLOY_FUNC float ex2_approx(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
}  // namespace detail

#define ALLOY_FAST1(name, expr)                                                            \
  template <class T> ALLOY_FUNC auto name(const T& x_in) {                                 \
    if constexpr (is_arithmetic_v<T>) {                                                    \
      float x = float(x_in);                                                               \
      return ::metal::detail::fres_t<T>(expr);                                             \
    } else if constexpr (::metal::detail::is_vec_v<T>) {                                   \
      T r;                                                                                 \
      for (int i = 0; i < ::metal::detail::vec_traits<T>::n; ++i)                          \
        r.v_[i] = typename T::value_type(::metal::fast::name(x_in.v_[i]));                 \
      return r;                                                                            \
    } else {                                                                               \
      return ::metal::name(x_in);                                                          \
    }                                                                                      \
  }
ALLOY_FAST1(exp, __expf(x))
ALLOY_FAST1(exp2, detail::ex2_approx(x))
ALLOY_FAST1(exp10, __exp10f(x))
ALLOY_FAST1(log, __log2f(x) * 0.693147180559945309f)
ALLOY_FAST1(log2, __log2f(x))
ALLOY_FAST1(log10, __log2f(x) * 0.301029995663981195f)
ALLOY_FAST1(sin, __sinf(x))
ALLOY_FAST1(cos, __cosf(x))
ALLOY_FAST1(tan, __tanf(x))
ALLOY_FAST1(rsqrt, ::rsqrtf(x))
#undef ALLOY_FAST1

template <class A, class B> ALLOY_FUNC auto pow(const A& a, const B& b) {
  if constexpr (is_arithmetic_v<A> && is_arithmetic_v<B>) {
    typedef ::metal::detail::common2_t<A, B> R;
    return R(__powf(float(a), float(b)));
  } else {
    return ::metal::pow(a, b);
  }
}
template <class A, class B> ALLOY_FUNC auto powr(const A& a, const B& b) { return ::metal::fast::pow(a, b); }
template <class A, class B> ALLOY_FUNC auto divide(const A& a, const B& b) {
  if constexpr (is_arithmetic_v<A> && is_arithmetic_v<B>) {
    typedef ::metal::detail::common2_t<A, B> R;
    return R(__fdividef(float(a), float(b)));
  } else {
    return ::metal::divide(a, b);
  }
}

}  // namespace fast
}  // namespace metal
