// The MSL standard library for the CUDA target (NVRTC, sm_90): the runtime
// header every translated CUDA kernel includes. The portable parts (scalar
// traits, bfloat, vectors, math, MLX utilities) are shared with the CPU
// target; the cuda_*.h headers hold what is CUDA-specific: half, barriers,
// SIMD-group functions on warp intrinsics, atomics, simdgroup_matrix on the
// tensor cores, and the derivation of Metal's thread ids from a 1-D block.
//
// It includes no CUDA toolkit header: NVRTC's built-in declarations suffice,
// which keeps a first compile fast.
#pragma once

#include "cuda_prelude.h"
#include "cuda_half.h"
#include "metal_base.h"
#include "cuda_half_ops.h"
#include "metal_vector.h"
#include "metal_math.h"
#include "cuda_math_fast.h"
#include "metal_thread_ids.h"
#include "cuda_sync.h"
#include "cuda_simd.h"
#include "cuda_atomic.h"
#include "cuda_matrix.h"
#include "cuda_dispatch.h"
#if __has_include("mlx_utils.h")
#include "mlx_utils.h"
#endif
