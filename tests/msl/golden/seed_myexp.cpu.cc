// custom_kernel_myexp_float_float_float: MLX metal_kernel 'myexp' translated by alloy::msl for the CPU (host C++20). Generated; do not edit.
#define ALLOY_MATH_MODE_SAFE 1
#define ALLOY_MSL_SELECT 1
#define ALLOY_MSL_USE_MATH 1
#include "metal_cpu.h"
using namespace metal;
#define __METAL_VERSION__ 310
#define __METAL__ 1
#define __HAVE_BFLOAT__ 1
template <typename T>
ALLOY_KERNEL_FN void custom_kernel_myexp_float_float_float(
    const float* __restrict__ inp,
    float* __restrict__ out,
    uint3 thread_position_in_grid) {
#line 1 "source"

        uint elem = thread_position_in_grid.x;
        T tmp = inp[elem];
        out[elem] = metal::exp(tmp);
    
#line 22 "generated"
}

extern "C" ALLOY_EXPORT void alloy_kernel_main(const alloy_msl::cpu::Launch* L) {
  alloy_msl::cpu::run</*uses_sync=*/false>(L, [&](const alloy_msl::ThreadIds& t) {
    custom_kernel_myexp_float_float_float<float>(
        static_cast<const float*>(L->buffers[0]),
        static_cast<float*>(L->buffers[1]),
        t.thread_position_in_grid);
  });
}
