// custom_kernel_header_helpers_float_n3_1_float_floats_floatc_float: MLX metal_kernel 'header_helpers' translated by alloy::msl for the CPU (host C++20). Generated; do not edit.
#define ALLOY_MATH_MODE_SAFE 1
#define ALLOY_MSL_SELECT 1
#define ALLOY_MSL_USE_HALF_OPS 1
#include "metal_cpu.h"
using namespace metal;
#define __METAL_VERSION__ 310
#define __METAL__ 1
#define __HAVE_BFLOAT__ 1
#line 1 "header"


using namespace metal;

ALLOY_PROGRAM_CONSTANT float kScale = 2.0f;
ALLOY_PROGRAM_CONSTANT int kTaps[3] = {1, 2, 1};
namespace helpers {
ALLOY_PROGRAM_CONSTANT half kHalf = half(0.5);
}

template <typename U>
METAL_FUNC U square(U x) {
  return x * x;
}

template <typename U>
inline U load_scaled(const U* p, const float& s, uint i) {
  U tmp = p[i];
  return tmp * U(s) * U(kScale);
}

inline float tg_sum(float* buf, uint n) {
  float acc = 0.0f;
  for (uint i = 0; i < n; ++i) acc += buf[i];
  return acc;
}

#define APPLY_BIAS(v, b) \
  do {                   \
    (v) += (b);          \
  } while (0)
#define SQ(x) square(x)
#line 44 "generated"
template <typename T, int K, bool USE_BIAS>
ALLOY_KERNEL_FN void custom_kernel_header_helpers_float_n3_1_float_floats_floatc_float(
    const float* __restrict__ inp,
    const float& scale,
    const float* __restrict__ bias,
    float* __restrict__ out,
    uint3 thread_position_in_grid) {
#line 1 "source"

    uint i = thread_position_in_grid.x;
    T v = load_scaled(inp, scale, i);
    v = SQ(v) * T(helpers::kHalf) + K;
    if (USE_BIAS) { APPLY_BIAS(v, bias[i % 3]); }
    out[i] = v * kTaps[i % 3];
#line 59 "generated"
}

extern "C" ALLOY_EXPORT void alloy_kernel_main(const alloy_msl::cpu::Launch* L) {
  alloy_msl::cpu::run</*uses_sync=*/false>(L, [&](const alloy_msl::ThreadIds& t) {
    custom_kernel_header_helpers_float_n3_1_float_floats_floatc_float<float, -3, true>(
        static_cast<const float*>(L->buffers[0]),
        *static_cast<const float*>(L->buffers[1]),
        static_cast<const float*>(L->buffers[2]),
        static_cast<float*>(L->buffers[3]),
        t.thread_position_in_grid);
  });
}
