// metal_kernel variants specialized to their inputs' layouts on the GPU
// (msl::KernelSpec::constant_layouts). A kernel that reads its inputs'
// shapes or strides runs its generic build first; once one set of layouts
// has been launched kLaunchesBeforeSpecializing times, a build with those
// layouts as constants is made on a background thread (NVRTC, and Alloy's
// disk cache, so a later process finds it), and later launches with the
// same layouts run it. The seed's grid_sample forward is 792 SASS
// instructions generic and 480 specialized. ALLOY_SPECIALIZE=0 turns it off.
#pragma once

#include <cstddef>
#include <memory>

#include "backend/cuda/custom_kernel.h"
#include "fast/cuda_plan.h"

namespace alloy::cuda {

inline constexpr unsigned kLaunchesBeforeSpecializing = 3;
// Layouts specialized per variant: a kernel whose shapes change at every
// call (a growing KV cache) builds a few and then runs generic.
inline constexpr unsigned kMaxSpecialized = 4;

// The variant of `v` built for these inputs' layouts, once the background
// thread has built it; else nullptr (and the launch counts toward building
// it). `plan` is v's launch plan (which inputs' shapes and strides it reads).
fast::KernelVariant* specialized_variant(fast::KernelVariant& v, const fast::CudaLaunchPlan& plan,
                                         const KernelInput* inputs, size_t n_inputs);

// Returns when no specialized build is queued or running (tests, benchmarks).
void wait_for_specializations();

}  // namespace alloy::cuda
