// The MSL standard library for the CUDA target (NVRTC, sm_90): the runtime
// header every translated CUDA kernel includes. The portable parts (scalar
// traits, bfloat, vectors, math, MLX utilities) are shared with the CPU
// target; the cuda_*.h headers hold what is CUDA-specific: half, barriers,
// SIMD-group functions on warp intrinsics, atomics, simdgroup_matrix on the
// tensor cores, and the derivation of Metal's thread ids from a 1-D block.
//
// It includes no CUDA toolkit header: NVRTC's built-in declarations suffice,
// which keeps a first compile fast. A translated kernel asks only for the
// parts it uses (metal_features.h); a kernel that asks for nothing gets all.
#pragma once

#include "metal_features.h"

#include "cuda_prelude.h"
#include "cuda_cancel.h"
#include "cuda_half.h"
#include "metal_base.h"
#if ALLOY_MSL_USE_HALF_OPS
#include "cuda_half_ops.h"
#endif
#include "metal_vector.h"
#include "metal_vector_cast.h"
#if ALLOY_MSL_USE_MATH
#include "metal_math.h"
#endif
#if ALLOY_MSL_USE_MATH_EXTRA
#include "metal_math_extra.h"
#endif
#if ALLOY_MSL_USE_MATRICES
#include "metal_matrix.h"
#endif
#if ALLOY_MSL_USE_FAST_MATH
#include "cuda_math_fast.h"
#endif
#include "metal_thread_ids.h"
#include "cuda_sync.h"
#include "cuda_threadgroup.h"
#if ALLOY_MSL_USE_SIMD
#include "cuda_simd.h"
#endif
#if ALLOY_MSL_USE_ATOMICS
#include "cuda_atomic.h"
#endif
#if ALLOY_MSL_USE_MATRIX
#include "cuda_matrix.h"
#endif
#if ALLOY_MSL_USE_TENSOR
namespace alloy_msl {
// This thread's place in its threadgroup (1-D blocks, threads outside the grid gone).
ALLOY_FUNC void thread_in_threadgroup(unsigned& index, unsigned& count) {
  index = threadIdx.x;
  count = cuda::threads_present_in_threadgroup();
}
}  // namespace alloy_msl
#include "metal_tensor.h"
#endif
#include "cuda_dispatch.h"
#if ALLOY_MSL_USE_MLX_UTILS && __has_include("mlx_utils.h")
#include "mlx_utils.h"
#endif
