// custom_kernel_half_literals_float16_t_float16_t: MLX metal_kernel 'half_literals' translated by alloy::msl for the CPU (host C++20). Generated; do not edit.
#define ALLOY_MATH_MODE_SAFE 1
#define ALLOY_MSL_SELECT 1
#define ALLOY_MSL_USE_HALF_OPS 1
#include "metal_cpu.h"
using namespace metal;
#define __METAL_VERSION__ 310
#define __METAL__ 1
#define __HAVE_BFLOAT__ 1
ALLOY_KERNEL_FN void custom_kernel_half_literals_float16_t_float16_t(
    const float16_t* __restrict__ inp,
    float16_t* __restrict__ out,
    uint3 thread_position_in_grid) {
#line 1 "source"

    uint i = thread_position_in_grid.x;
    half a = half(1.0);
    half b = half(0.5) * inp[i] + half(.25) - half(1e-2);
    half2 v = half2(half(2.0), -half(3.5));
    out[i] = a + b + v.x * v.y + 1.0f;
#line 22 "generated"
}

extern "C" ALLOY_EXPORT void alloy_kernel_main(const alloy_msl::cpu::Launch* L) {
  alloy_msl::cpu::run</*uses_sync=*/false>(L, [&](const alloy_msl::ThreadIds& t) {
    custom_kernel_half_literals_float16_t_float16_t(
        static_cast<const float16_t*>(L->buffers[0]),
        static_cast<float16_t*>(L->buffers[1]),
        t.thread_position_in_grid);
  });
}
