// custom_kernel_tg_reduce_float_256_float_float: MLX metal_kernel 'tg_reduce' translated by alloy::msl for the CPU (host C++20). Generated; do not edit.
#define ALLOY_MATH_MODE_SAFE 1
#define ALLOY_MSL_SELECT 1
#define ALLOY_MSL_CPU_COROUTINES 1
#include "metal_cpu.h"
using namespace metal;
template <typename T, int N>
ALLOY_KERNEL_FN ::alloy_msl::cpu::thread_task custom_kernel_tg_reduce_float_256_float_float(
    const float* inp,
    float* out,
    uint3 thread_position_in_grid,
    uint3 thread_position_in_threadgroup,
    uint3 threadgroup_position_in_grid,
    uint3 threads_per_threadgroup) {
#line 1 "source"

    #define TILE 32
    ALLOY_THREADGROUP T partial[N];
    ALLOY_THREADGROUP float tile[TILE][TILE + 1];
    uint lid = thread_position_in_threadgroup.x;
    uint gid = thread_position_in_grid.x;
    partial[lid] = inp[gid];
    tile[lid % TILE][lid / TILE] = 0.0f;
    (co_await threadgroup_barrier(mem_flags::mem_threadgroup));
    T* p = partial;
    for (uint s = threads_per_threadgroup.x / 2; s > 0; s /= 2) {
        if (lid < s) p[lid] += p[lid + s];
        (co_await threadgroup_barrier(mem_flags::mem_threadgroup));
    }
    if (lid == 0) {
        out[threadgroup_position_in_grid.x] = ((T*)partial)[0];
    }
#line 34 "generated"
co_return;
}

extern "C" ALLOY_EXPORT void alloy_kernel_main(const alloy_msl::cpu::Launch* L) {
  alloy_msl::cpu::run_coroutines(L, [&](const alloy_msl::ThreadIds& t) {
    return custom_kernel_tg_reduce_float_256_float_float<float, 256>(
        static_cast<const float*>(L->buffers[0]),
        static_cast<float*>(L->buffers[1]),
        t.thread_position_in_grid,
        t.thread_position_in_threadgroup,
        t.threadgroup_position_in_grid,
        t.threads_per_threadgroup);
  });
}
