// custom_kernel_myexp_strided_float_float_float: MLX metal_kernel 'myexp_strided' translated by alloy::msl for the CPU (host C++20). Generated; do not edit.
#define ALLOY_MATH_MODE_SAFE 1
#define ALLOY_MSL_SELECT 1
#define ALLOY_MSL_USE_MATH 1
#define ALLOY_MSL_USE_MLX_UTILS 1
#include "metal_cpu.h"
#include "mlx_utils.h"
using namespace metal;
#define __METAL_VERSION__ 310
#define __METAL__ 1
#define __HAVE_BFLOAT__ 1
template <typename T>
ALLOY_KERNEL_FN void custom_kernel_myexp_strided_float_float_float(
    const float* __restrict__ inp,
    const int* __restrict__ inp_shape,
    const int64_t* __restrict__ inp_strides,
    const int inp_ndim,
    float* __restrict__ out,
    uint3 thread_position_in_grid) {
#line 1 "source"

        uint elem = thread_position_in_grid.x;
        // Utils from `mlx/backend/metal/kernels/utils.h` are automatically included
        uint loc = elem_to_loc(elem, inp_shape, inp_strides, inp_ndim);
        T tmp = inp[loc];
        // Output arrays are always row contiguous
        out[elem] = metal::exp(tmp);
    
#line 30 "generated"
}

extern "C" ALLOY_EXPORT void alloy_kernel_main(const alloy_msl::cpu::Launch* L) {
  alloy_msl::cpu::run</*uses_sync=*/false>(L, [&](const alloy_msl::ThreadIds& t) {
    custom_kernel_myexp_strided_float_float_float<float>(
        static_cast<const float*>(L->buffers[0]),
        L->shapes[0],
        L->strides[0],
        L->ndims[0],
        static_cast<float*>(L->buffers[1]),
        t.thread_position_in_grid);
  });
}
