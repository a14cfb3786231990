// custom_kernel_swizzles_float_float: MLX metal_kernel 'swizzles' translated by alloy::msl for the CPU (host C++20). Generated; do not edit.
#define ALLOY_MATH_MODE_SAFE 1
#define ALLOY_MSL_SELECT 1
#include "metal_cpu.h"
using namespace metal;
#define __METAL_VERSION__ 310
#define __METAL__ 1
#define __HAVE_BFLOAT__ 1
ALLOY_KERNEL_FN void custom_kernel_swizzles_float_float(
    const float* __restrict__ inp,
    float* __restrict__ out,
    uint3 thread_position_in_grid) {
#line 1 "source"

    uint i = thread_position_in_grid.x;
    float4 v = float4(inp[4 * i], inp[4 * i + 1], inp[4 * i + 2], inp[4 * i + 3]);
    float2 lo = v.template swizzle<0,1>();
    v.template swizzle_ref<2,3>() = lo.template swizzle<1,0>();
    v.template swizzle_ref<0,1>() += float2(1.0f, 2.0f);
    float4 c = v.template swizzle<2,1,0,3>();
    c.template swizzle_ref<0,1,2>() *= 0.5f;
    float3 t = c.template swizzle<0,1,2>();
    v.x = t.z + c.a;
    ::alloy_msl::vector_cast_ptr<float4> o = ::alloy_msl::vector_cast<float4>(out);
    o[i] = v.template swizzle<3,2,1,0>();
#line 27 "generated"
}

extern "C" ALLOY_EXPORT void alloy_kernel_main(const alloy_msl::cpu::Launch* L) {
  alloy_msl::cpu::run</*uses_sync=*/false>(L, [&](const alloy_msl::ThreadIds& t) {
    custom_kernel_swizzles_float_float(
        static_cast<const float*>(L->buffers[0]),
        static_cast<float*>(L->buffers[1]),
        t.thread_position_in_grid);
  });
}
