// custom_kernel_tg_reduce_float_256_float_float: MLX metal_kernel 'tg_reduce' translated by alloy::msl for the CPU (host C++20). Generated; do not edit.
// Threads run as regions.
#define ALLOY_MATH_MODE_SAFE 1
#define ALLOY_MSL_SELECT 1
#define ALLOY_MSL_CPU_REGIONS 1
#include "metal_cpu.h"
using namespace metal;
#define __METAL_VERSION__ 310
#define __METAL__ 1
#define __HAVE_BFLOAT__ 1
template <typename T, int N>
ALLOY_KERNEL_FN void custom_kernel_tg_reduce_float_256_float_float(
    const float* __restrict__ inp,
    float* __restrict__ out,
    ::alloy_msl::cpu::GroupThreads& alloy_g) {
#line 1 "source"

    #define TILE 32
    ALLOY_THREADGROUP T partial[N];
    ALLOY_THREADGROUP float tile[TILE][TILE + 1];
    struct alloy_frame_t { uint lid[::alloy_msl::cpu::kRegionMaxThreads]; T * p[::alloy_msl::cpu::kRegionMaxThreads]; ::alloy_msl::cpu::RegionDeposits alloy_deposits; }; alloy_frame_t* alloy_fvp = static_cast<alloy_frame_t*>(::alloy_msl::cpu::region_frame(alloy_g, sizeof(alloy_frame_t))); if (!alloy_fvp) return; alloy_frame_t& __restrict__ alloy_fv = *alloy_fvp; ::alloy_msl::cpu::region_for(alloy_g, [&](unsigned long alloy_tid, ::metal::uint3 alloy_lid) __attribute__((always_inline)) { [[maybe_unused]] const auto thread_position_in_grid = ::alloy_msl::cpu::region_thread_position_in_grid(alloy_g, alloy_tid, alloy_lid); [[maybe_unused]] const auto thread_position_in_threadgroup = ::alloy_msl::cpu::region_thread_position_in_threadgroup(alloy_g, alloy_tid, alloy_lid); [[maybe_unused]] const auto threadgroup_position_in_grid = alloy_g.base.threadgroup_position_in_grid; [[maybe_unused]] const auto threads_per_threadgroup = alloy_g.base.threads_per_threadgroup; uint lid = alloy_fv.lid[alloy_tid]; {  lid = thread_position_in_threadgroup.x;
    uint gid = thread_position_in_grid.x;
    partial[lid] = inp[gid];
    tile[lid % TILE][lid / TILE] = 0.0f;
    
     } alloy_next_1: ; alloy_fv.lid[alloy_tid] = lid; }); ::alloy_msl::cpu::region_for(alloy_g, [&](unsigned long alloy_tid, ::metal::uint3 alloy_lid) __attribute__((always_inline)) { [[maybe_unused]] const auto thread_position_in_grid = ::alloy_msl::cpu::region_thread_position_in_grid(alloy_g, alloy_tid, alloy_lid); [[maybe_unused]] const auto thread_position_in_threadgroup = ::alloy_msl::cpu::region_thread_position_in_threadgroup(alloy_g, alloy_tid, alloy_lid); [[maybe_unused]] const auto threadgroup_position_in_grid = alloy_g.base.threadgroup_position_in_grid; [[maybe_unused]] const auto threads_per_threadgroup = alloy_g.base.threads_per_threadgroup; T * p = alloy_fv.p[alloy_tid]; {  p = partial;
     } alloy_next_2: ; alloy_fv.p[alloy_tid] = p; }); { [[maybe_unused]] const auto threadgroup_position_in_grid = alloy_g.base.threadgroup_position_in_grid; [[maybe_unused]] const auto threads_per_threadgroup = alloy_g.base.threads_per_threadgroup; uint s = threads_per_threadgroup . x / 2; for (; s > 0; s /= 2) {  {
        ::alloy_msl::cpu::region_for(alloy_g, [&](unsigned long alloy_tid, ::metal::uint3 alloy_lid) __attribute__((always_inline)) { [[maybe_unused]] const auto thread_position_in_grid = ::alloy_msl::cpu::region_thread_position_in_grid(alloy_g, alloy_tid, alloy_lid); [[maybe_unused]] const auto thread_position_in_threadgroup = ::alloy_msl::cpu::region_thread_position_in_threadgroup(alloy_g, alloy_tid, alloy_lid); [[maybe_unused]] const auto threadgroup_position_in_grid = alloy_g.base.threadgroup_position_in_grid; [[maybe_unused]] const auto threads_per_threadgroup = alloy_g.base.threads_per_threadgroup; uint lid = alloy_fv.lid[alloy_tid]; T * p = alloy_fv.p[alloy_tid]; { if (lid < s) p[lid] += p[lid + s];
        
     } alloy_next_3: ; alloy_fv.p[alloy_tid] = p; }); } } } 
    ::alloy_msl::cpu::region_for(alloy_g, [&](unsigned long alloy_tid, ::metal::uint3 alloy_lid) __attribute__((always_inline)) { [[maybe_unused]] const auto thread_position_in_grid = ::alloy_msl::cpu::region_thread_position_in_grid(alloy_g, alloy_tid, alloy_lid); [[maybe_unused]] const auto thread_position_in_threadgroup = ::alloy_msl::cpu::region_thread_position_in_threadgroup(alloy_g, alloy_tid, alloy_lid); [[maybe_unused]] const auto threadgroup_position_in_grid = alloy_g.base.threadgroup_position_in_grid; [[maybe_unused]] const auto threads_per_threadgroup = alloy_g.base.threads_per_threadgroup; uint lid = alloy_fv.lid[alloy_tid]; { if (lid == 0) {
        out[threadgroup_position_in_grid.x] = ((T*)partial)[0];
    }  } alloy_next_4: ; }); 
#line 35 "generated"
}

extern "C" ALLOY_EXPORT void alloy_kernel_main(const alloy_msl::cpu::Launch* L) {
  alloy_msl::cpu::run_regions(L, [&](alloy_msl::cpu::GroupThreads& alloy_g) {
    custom_kernel_tg_reduce_float_256_float_float<float, 256>(
        static_cast<const float*>(L->buffers[0]),
        static_cast<float*>(L->buffers[1]),
        alloy_g);
  });
}
