// custom_kernel_grid_sample_float_float_float_float: MLX metal_kernel 'grid_sample' translated by alloy::msl for the CPU (host C++20). Generated; do not edit.
// Threads run as regions.
#define ALLOY_MATH_MODE_SAFE 1
#define ALLOY_MSL_SELECT 1
#define ALLOY_MSL_USE_MATH 1
#define ALLOY_MSL_CPU_REGIONS 1
#include "metal_cpu.h"
using namespace metal;
#define __METAL_VERSION__ 310
#define __METAL__ 1
#define __HAVE_BFLOAT__ 1
template <typename T>
ALLOY_KERNEL_FN void custom_kernel_grid_sample_float_float_float_float(
    const float* __restrict__ x,
    const int* __restrict__ x_shape,
    const float* __restrict__ grid,
    const int* __restrict__ grid_shape,
    float* __restrict__ out,
    ::alloy_msl::cpu::GroupThreads& alloy_g) {
#line 1 "source"

        
#line 3 "source"
int H = x_shape [ 1 ] ;
#line 4 "source"
int W = x_shape [ 2 ] ;
#line 5 "source"
int C = x_shape [ 3 ] ;
#line 6 "source"
int gH = grid_shape [ 1 ] ;
#line 7 "source"
int gW = grid_shape [ 2 ] ;
#line 9 "source"
int w_stride = C ;
#line 10 "source"
int h_stride = W * w_stride ;
#line 11 "source"
int b_stride = H * h_stride ;
#line 2 "source"
::alloy_msl::cpu::region_for_rows<uint>(alloy_g, C, [&](unsigned long alloy_tid, ::metal::uint3 alloy_lid, auto alloy_rc) __attribute__((always_inline)) { [[maybe_unused]] const auto thread_position_in_grid = ::alloy_msl::cpu::region_thread_position_in_grid(alloy_g, alloy_tid, alloy_lid); [[maybe_unused]] const auto alloy_row = alloy_rc.row; [[maybe_unused]] const auto alloy_col = alloy_rc.col; { uint elem = thread_position_in_grid.x;
        
        
        
        
        

        
        
        

        uint grid_idx = alloy_row * 2;
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

        T I_nw = x[base_idx + iy_nw * h_stride + ix_nw * w_stride];
        T I_ne = x[base_idx + iy_ne * h_stride + ix_ne * w_stride];
        T I_sw = x[base_idx + iy_sw * h_stride + ix_sw * w_stride];
        T I_se = x[base_idx + iy_se * h_stride + ix_se * w_stride];

        I_nw = iy_nw >= 0 && iy_nw <= H - 1 && ix_nw >= 0 && ix_nw <= W - 1 ? ::alloy_msl::cond_arm<decltype(0)>(I_nw) : ::alloy_msl::cond_lit<decltype((I_nw))>(0);
        I_ne = iy_ne >= 0 && iy_ne <= H - 1 && ix_ne >= 0 && ix_ne <= W - 1 ? ::alloy_msl::cond_arm<decltype(0)>(I_ne) : ::alloy_msl::cond_lit<decltype((I_ne))>(0);
        I_sw = iy_sw >= 0 && iy_sw <= H - 1 && ix_sw >= 0 && ix_sw <= W - 1 ? ::alloy_msl::cond_arm<decltype(0)>(I_sw) : ::alloy_msl::cond_lit<decltype((I_sw))>(0);
        I_se = iy_se >= 0 && iy_se <= H - 1 && ix_se >= 0 && ix_se <= W - 1 ? ::alloy_msl::cond_arm<decltype(0)>(I_se) : ::alloy_msl::cond_lit<decltype((I_se))>(0);

        out[elem] = nw * I_nw + ne * I_ne + sw * I_sw + se * I_se;  } alloy_next_1: ; }); 
    
#line 89 "generated"
}

extern "C" ALLOY_EXPORT void alloy_kernel_main(const alloy_msl::cpu::Launch* L) {
  alloy_msl::cpu::run_regions(L, [&](alloy_msl::cpu::GroupThreads& alloy_g) {
    custom_kernel_grid_sample_float_float_float_float<float>(
        static_cast<const float*>(L->buffers[0]),
        L->shapes[0],
        static_cast<const float*>(L->buffers[1]),
        L->shapes[1],
        static_cast<float*>(L->buffers[2]),
        alloy_g);
  });
}
