// custom_kernel_grid_sample_grad_float_float_float_float_float_float: MLX metal_kernel 'grid_sample_grad' translated by alloy::msl for the CPU (host C++20). Generated; do not edit.
// Threads run as regions.
#define ALLOY_MATH_MODE_SAFE 1
#define ALLOY_MSL_SELECT 1
#define ALLOY_MSL_USE_HALF_OPS 1
#define ALLOY_MSL_USE_MATH 1
#define ALLOY_MSL_USE_SIMD 1
#define ALLOY_MSL_USE_ATOMICS 1
#define ALLOY_MSL_USE_MLX_UTILS 1
#define ALLOY_MSL_USE_LANE_STATE 1
#define ALLOY_MSL_CPU_REGIONS 1
#include "metal_cpu.h"
#include "mlx_utils.h"
using namespace metal;
#define __METAL_VERSION__ 310
#define __METAL__ 1
#define __HAVE_BFLOAT__ 1
template <typename T>
ALLOY_KERNEL_FN void custom_kernel_grid_sample_grad_float_float_float_float_float_float(
    const float* __restrict__ x,
    const int* __restrict__ x_shape,
    const float* __restrict__ grid,
    const int* __restrict__ grid_shape,
    const float* __restrict__ cotangent,
    atomic<float>* __restrict__ x_grad,
    atomic<float>* __restrict__ grid_grad,
    ::alloy_msl::cpu::GroupThreads& alloy_g,
    auto alloy_plain_adds) {
#line 1 "source"

        [[maybe_unused]] const auto threads_per_simdgroup = ::metal::uint(::alloy_msl::kSimdWidth); 
#line 3 "source"
int H = x_shape [ 1 ] ;
#line 4 "source"
int W = x_shape [ 2 ] ;
#line 5 "source"
int C = x_shape [ 3 ] ;
#line 7 "source"
int C_padded = ceildiv ( C , threads_per_simdgroup ) * threads_per_simdgroup ;
#line 9 "source"
int gH = grid_shape [ 1 ] ;
#line 10 "source"
int gW = grid_shape [ 2 ] ;
#line 12 "source"
int w_stride = C ;
#line 13 "source"
int h_stride = W * w_stride ;
#line 14 "source"
int b_stride = H * h_stride ;
#line 80 "source"
T gix_mult = W / 2 ;
#line 81 "source"
T giy_mult = H / 2 ;
#line 2 "source"
struct alloy_frame_t { uint grid_idx[::alloy_msl::cpu::kRegionMaxThreads]; T gix[::alloy_msl::cpu::kRegionMaxThreads]; T giy[::alloy_msl::cpu::kRegionMaxThreads]; ::alloy_msl::cpu::RegionDeposits alloy_deposits; }; alloy_frame_t* alloy_fvp = static_cast<alloy_frame_t*>(::alloy_msl::cpu::region_frame(alloy_g, sizeof(alloy_frame_t))); if (!alloy_fvp) return; alloy_frame_t& __restrict__ alloy_fv = *alloy_fvp; ::alloy_msl::cpu::region_for_rows<uint>(alloy_g, C_padded, [&](unsigned long alloy_tid, ::metal::uint3 alloy_lid, auto alloy_rc) __attribute__((always_inline)) { [[maybe_unused]] const auto thread_index_in_simdgroup = ::alloy_msl::cpu::region_thread_index_in_simdgroup(alloy_g, alloy_tid, alloy_lid); [[maybe_unused]] const auto thread_position_in_grid = ::alloy_msl::cpu::region_thread_position_in_grid(alloy_g, alloy_tid, alloy_lid); [[maybe_unused]] const auto threads_per_simdgroup = ::metal::uint(::alloy_msl::kSimdWidth); [[maybe_unused]] const auto alloy_row = alloy_rc.row; [[maybe_unused]] const auto alloy_col = alloy_rc.col; T gix = alloy_fv.gix[alloy_tid]; T giy = alloy_fv.giy[alloy_tid]; uint grid_idx = alloy_fv.grid_idx[alloy_tid]; { uint elem = thread_position_in_grid.x;
        
        
        
        // Pad C to the nearest larger simdgroup size multiple
        

        
        

        
        
        

        grid_idx = alloy_row * 2;
        float ix = ((grid[grid_idx] + 1) * W - 1) / 2;
        float iy = ((grid[grid_idx + 1] + 1) * H - 1) / 2;

        int ix_nw = floor(ix);
        int iy_nw = floor(iy);

        int ix_ne = ix_nw + 1;
        int iy_ne = iy_nw;

        int ix_sw = ix_nw;
        int iy_sw = iy_nw + 1;

        int ix_se = ix_nw + 1;
        int iy_se = iy_nw + 1;

        T nw = (ix_se - ix)    * (iy_se - iy);
        T ne = (ix    - ix_sw) * (iy_sw - iy);
        T sw = (ix_ne - ix)    * (iy    - iy_ne);
        T se = (ix    - ix_nw) * (iy    - iy_nw);

        int batch_idx = alloy_row / gH / gW * b_stride;
        int channel_idx = alloy_col ;
        int base_idx = batch_idx + channel_idx;

        gix = T(0);
        giy = T(0);
        if (channel_idx < C) {
            int cot_index = alloy_row * C + channel_idx;
            T cot = cotangent[cot_index];
            if (iy_nw >= 0 & iy_nw <= H - 1 & ix_nw >= 0 & ix_nw <= W - 1) {
                int offset = base_idx + iy_nw * h_stride + ix_nw * w_stride;
                ::alloy_msl::cpu::fetch_add_private(alloy_plain_adds, &x_grad[offset], nw * cot, memory_order_relaxed);

                T I_nw = x[offset];
                gix -= I_nw * (iy_se - iy) * cot;
                giy -= I_nw * (ix_se - ix) * cot;
            }
            if (iy_ne >= 0 & iy_ne <= H - 1 & ix_ne >= 0 & ix_ne <= W - 1) {
                int offset = base_idx + iy_ne * h_stride + ix_ne * w_stride;
                ::alloy_msl::cpu::fetch_add_private(alloy_plain_adds, &x_grad[offset], ne * cot, memory_order_relaxed);

                T I_ne = x[offset];
                gix += I_ne * (iy_sw - iy) * cot;
                giy -= I_ne * (ix - ix_sw) * cot;
            }
            if (iy_sw >= 0 & iy_sw <= H - 1 & ix_sw >= 0 & ix_sw <= W - 1) {
                int offset = base_idx + iy_sw * h_stride + ix_sw * w_stride;
                ::alloy_msl::cpu::fetch_add_private(alloy_plain_adds, &x_grad[offset], sw * cot, memory_order_relaxed);

                T I_sw = x[offset];
                gix -= I_sw * (iy - iy_ne) * cot;
                giy += I_sw * (ix_ne - ix) * cot;
            }
            if (iy_se >= 0 & iy_se <= H - 1 & ix_se >= 0 & ix_se <= W - 1) {
                int offset = base_idx + iy_se * h_stride + ix_se * w_stride;
                ::alloy_msl::cpu::fetch_add_private(alloy_plain_adds, &x_grad[offset], se * cot, memory_order_relaxed);

                T I_se = x[offset];
                gix += I_se * (iy - iy_nw) * cot;
                giy += I_se * (ix - ix_nw) * cot;
            }
        }

        
        

        // Reduce across each simdgroup first.
        // This is much faster than relying purely on atomics.
        ::alloy_msl::simd_reconverge();  } ::alloy_msl::cpu::region_deposit(alloy_fv.alloy_deposits.slot[0], alloy_tid, simd_sum ( gix )); ::alloy_msl::cpu::region_deposit(alloy_fv.alloy_deposits.slot[1], alloy_tid, simd_sum ( giy )); alloy_next_1: ; alloy_fv.gix[alloy_tid] = gix; alloy_fv.giy[alloy_tid] = giy; alloy_fv.grid_idx[alloy_tid] = grid_idx; }); ::alloy_msl::cpu::region_exchange(alloy_g, 0, 2); ::alloy_msl::cpu::region_for_rows<uint>(alloy_g, C_padded, [&](unsigned long alloy_tid, ::metal::uint3 alloy_lid, auto alloy_rc) __attribute__((always_inline)) { [[maybe_unused]] const auto thread_index_in_simdgroup = ::alloy_msl::cpu::region_thread_index_in_simdgroup(alloy_g, alloy_tid, alloy_lid); [[maybe_unused]] const auto thread_position_in_grid = ::alloy_msl::cpu::region_thread_position_in_grid(alloy_g, alloy_tid, alloy_lid); [[maybe_unused]] const auto threads_per_simdgroup = ::metal::uint(::alloy_msl::kSimdWidth); [[maybe_unused]] const auto alloy_row = alloy_rc.row; [[maybe_unused]] const auto alloy_col = alloy_rc.col; T gix = alloy_fv.gix[alloy_tid]; T giy = alloy_fv.giy[alloy_tid]; uint grid_idx = alloy_fv.grid_idx[alloy_tid]; { gix = ::alloy_msl::cpu::region_result(alloy_g, 0, alloy_fv.alloy_deposits.slot[0], alloy_tid, simd_sum(gix));
        ::alloy_msl::simd_reconverge(); giy = ::alloy_msl::cpu::region_result(alloy_g, 1, alloy_fv.alloy_deposits.slot[1], alloy_tid, simd_sum(giy));

        if (thread_index_in_simdgroup == 0) {
            ::alloy_msl::cpu::fetch_add_private(alloy_plain_adds, &grid_grad[grid_idx], gix * gix_mult, memory_order_relaxed);
            ::alloy_msl::cpu::fetch_add_private(alloy_plain_adds, &grid_grad[grid_idx + 1], giy * giy_mult, memory_order_relaxed);
        }  } alloy_next_2: ; alloy_fv.gix[alloy_tid] = gix; alloy_fv.giy[alloy_tid] = giy; alloy_fv.grid_idx[alloy_tid] = grid_idx; }); 
    
#line 147 "generated"
}

extern "C" ALLOY_EXPORT void alloy_kernel_main(const alloy_msl::cpu::Launch* L) {
  alloy_msl::cpu::run_regions(L, [&](alloy_msl::cpu::GroupThreads& alloy_g) {
    (L->plain_adds != 0 ? custom_kernel_grid_sample_grad_float_float_float_float_float_float<float>(
        static_cast<const float*>(L->buffers[0]),
        L->shapes[0],
        static_cast<const float*>(L->buffers[1]),
        L->shapes[1],
        static_cast<const float*>(L->buffers[2]),
        static_cast<atomic<float>*>(L->buffers[3]),
        static_cast<atomic<float>*>(L->buffers[4]),
        alloy_g,
        ::alloy_msl::cpu::PlainAdds<true>{})
        : custom_kernel_grid_sample_grad_float_float_float_float_float_float<float>(
        static_cast<const float*>(L->buffers[0]),
        L->shapes[0],
        static_cast<const float*>(L->buffers[1]),
        L->shapes[1],
        static_cast<const float*>(L->buffers[2]),
        static_cast<atomic<float>*>(L->buffers[3]),
        static_cast<atomic<float>*>(L->buffers[4]),
        alloy_g,
        ::alloy_msl::cpu::PlainAdds<false>{}));
  });
}
