// custom_kernel_tg_reduce_float_256_float_float: MLX metal_kernel 'tg_reduce' translated by alloy::msl for the CPU (host C++20). Generated; do not edit.
#define ALLOY_MATH_MODE_SAFE 1
#define ALLOY_MSL_SELECT 1
#define ALLOY_MSL_CPU_REGIONS 1
#include "metal_cpu.h"
using namespace metal;
template <typename T, int N>
ALLOY_KERNEL_FN void custom_kernel_tg_reduce_float_256_float_float(
    const float* inp,
    float* out,
    ::alloy_msl::cpu::GroupThreads& alloy_g) {
#line 1 "source"

    #define TILE 32
    struct alloy_frame_t { uint lid[::alloy_msl::cpu::kRegionMaxThreads]; T * p[::alloy_msl::cpu::kRegionMaxThreads]; uint s[::alloy_msl::cpu::kRegionMaxThreads]; }; alloy_frame_t* alloy_fvp = static_cast<alloy_frame_t*>(::alloy_msl::cpu::region_frame(alloy_g, sizeof(alloy_frame_t))); if (!alloy_fvp) return; alloy_frame_t& alloy_fv = *alloy_fvp; ALLOY_THREADGROUP T partial[N];
    ALLOY_THREADGROUP float tile[TILE][TILE + 1];
    for (unsigned alloy_tid = 0; alloy_tid < alloy_g.count; ++alloy_tid) { if (alloy_g.alive[alloy_tid] != 1) continue; [[maybe_unused]] const auto thread_position_in_grid = ::alloy_msl::cpu::region_thread_position_in_grid(alloy_g, alloy_tid); [[maybe_unused]] const auto thread_position_in_threadgroup = ::alloy_msl::cpu::region_thread_position_in_threadgroup(alloy_g, alloy_tid); [[maybe_unused]] const auto threadgroup_position_in_grid = ::alloy_msl::cpu::region_threadgroup_position_in_grid(alloy_g, alloy_tid); [[maybe_unused]] const auto threads_per_threadgroup = ::alloy_msl::cpu::region_threads_per_threadgroup(alloy_g, alloy_tid); {  alloy_fv.lid[alloy_tid] = thread_position_in_threadgroup.x;
    uint gid = thread_position_in_grid.x;
    partial[alloy_fv.lid[alloy_tid]] = inp[gid];
    tile[alloy_fv.lid[alloy_tid] % TILE][alloy_fv.lid[alloy_tid] / TILE] = 0.0f;
    
     } alloy_next_1: ; } for (unsigned alloy_tid = 0; alloy_tid < alloy_g.count; ++alloy_tid) { if (alloy_g.alive[alloy_tid] != 1) continue; [[maybe_unused]] const auto thread_position_in_grid = ::alloy_msl::cpu::region_thread_position_in_grid(alloy_g, alloy_tid); [[maybe_unused]] const auto thread_position_in_threadgroup = ::alloy_msl::cpu::region_thread_position_in_threadgroup(alloy_g, alloy_tid); [[maybe_unused]] const auto threadgroup_position_in_grid = ::alloy_msl::cpu::region_threadgroup_position_in_grid(alloy_g, alloy_tid); [[maybe_unused]] const auto threads_per_threadgroup = ::alloy_msl::cpu::region_threads_per_threadgroup(alloy_g, alloy_tid); {  alloy_fv.p[alloy_tid] = partial;
     } alloy_next_2: ; } for (unsigned alloy_tid = 0; alloy_tid < alloy_g.count; ++alloy_tid) { if (alloy_g.alive[alloy_tid] != 1) continue; [[maybe_unused]] const auto thread_position_in_grid = ::alloy_msl::cpu::region_thread_position_in_grid(alloy_g, alloy_tid); [[maybe_unused]] const auto thread_position_in_threadgroup = ::alloy_msl::cpu::region_thread_position_in_threadgroup(alloy_g, alloy_tid); [[maybe_unused]] const auto threadgroup_position_in_grid = ::alloy_msl::cpu::region_threadgroup_position_in_grid(alloy_g, alloy_tid); [[maybe_unused]] const auto threads_per_threadgroup = ::alloy_msl::cpu::region_threads_per_threadgroup(alloy_g, alloy_tid); { alloy_fv.s[alloy_tid] = threads_per_threadgroup . x / 2;  } alloy_next_3: ; } while (::alloy_msl::cpu::region_loop(alloy_g, [&](unsigned alloy_tid) -> bool { [[maybe_unused]] const auto thread_position_in_grid = ::alloy_msl::cpu::region_thread_position_in_grid(alloy_g, alloy_tid); [[maybe_unused]] const auto thread_position_in_threadgroup = ::alloy_msl::cpu::region_thread_position_in_threadgroup(alloy_g, alloy_tid); [[maybe_unused]] const auto threadgroup_position_in_grid = ::alloy_msl::cpu::region_threadgroup_position_in_grid(alloy_g, alloy_tid); [[maybe_unused]] const auto threads_per_threadgroup = ::alloy_msl::cpu::region_threads_per_threadgroup(alloy_g, alloy_tid); return bool(alloy_fv.s[alloy_tid] > 0); }, 0u)) {  {
        for (unsigned alloy_tid = 0; alloy_tid < alloy_g.count; ++alloy_tid) { if (alloy_g.alive[alloy_tid] != 1) continue; [[maybe_unused]] const auto thread_position_in_grid = ::alloy_msl::cpu::region_thread_position_in_grid(alloy_g, alloy_tid); [[maybe_unused]] const auto thread_position_in_threadgroup = ::alloy_msl::cpu::region_thread_position_in_threadgroup(alloy_g, alloy_tid); [[maybe_unused]] const auto threadgroup_position_in_grid = ::alloy_msl::cpu::region_threadgroup_position_in_grid(alloy_g, alloy_tid); [[maybe_unused]] const auto threads_per_threadgroup = ::alloy_msl::cpu::region_threads_per_threadgroup(alloy_g, alloy_tid); { if (alloy_fv.lid[alloy_tid] < alloy_fv.s[alloy_tid]) alloy_fv.p[alloy_tid][alloy_fv.lid[alloy_tid]] += alloy_fv.p[alloy_tid][alloy_fv.lid[alloy_tid] + alloy_fv.s[alloy_tid]];
        
     } alloy_next_4: ; } } for (unsigned alloy_tid = 0; alloy_tid < alloy_g.count; ++alloy_tid) { if (alloy_g.alive[alloy_tid] != 1) continue; [[maybe_unused]] const auto thread_position_in_grid = ::alloy_msl::cpu::region_thread_position_in_grid(alloy_g, alloy_tid); [[maybe_unused]] const auto thread_position_in_threadgroup = ::alloy_msl::cpu::region_thread_position_in_threadgroup(alloy_g, alloy_tid); [[maybe_unused]] const auto threadgroup_position_in_grid = ::alloy_msl::cpu::region_threadgroup_position_in_grid(alloy_g, alloy_tid); [[maybe_unused]] const auto threads_per_threadgroup = ::alloy_msl::cpu::region_threads_per_threadgroup(alloy_g, alloy_tid); { alloy_fv.s[alloy_tid] /= 2;  } alloy_next_5: ; } } 
    for (unsigned alloy_tid = 0; alloy_tid < alloy_g.count; ++alloy_tid) { if (alloy_g.alive[alloy_tid] != 1) continue; [[maybe_unused]] const auto thread_position_in_grid = ::alloy_msl::cpu::region_thread_position_in_grid(alloy_g, alloy_tid); [[maybe_unused]] const auto thread_position_in_threadgroup = ::alloy_msl::cpu::region_thread_position_in_threadgroup(alloy_g, alloy_tid); [[maybe_unused]] const auto threadgroup_position_in_grid = ::alloy_msl::cpu::region_threadgroup_position_in_grid(alloy_g, alloy_tid); [[maybe_unused]] const auto threads_per_threadgroup = ::alloy_msl::cpu::region_threads_per_threadgroup(alloy_g, alloy_tid); { if (alloy_fv.lid[alloy_tid] == 0) {
        out[threadgroup_position_in_grid.x] = ((T*)partial)[0];
    }  } alloy_next_6: ; } 
#line 31 "generated"
}

extern "C" ALLOY_EXPORT void alloy_kernel_main(const alloy_msl::cpu::Launch* L) {
  alloy_msl::cpu::run_regions(L, [&](alloy_msl::cpu::GroupThreads& alloy_g) {
    custom_kernel_tg_reduce_float_256_float_float<float, 256>(
        static_cast<const float*>(L->buffers[0]),
        static_cast<float*>(L->buffers[1]),
        alloy_g);
  });
}
