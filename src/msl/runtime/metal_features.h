// Which parts of the runtime a translation unit parses. A first compile
// spends most of its time parsing the runtime headers, so the translator
// (src/msl/features.cpp) defines ALLOY_MSL_SELECT and one ALLOY_MSL_USE_<part>
// per part the kernel's tokens need, before including metal_cuda.h or
// metal_cpu.h. Without ALLOY_MSL_SELECT (hand-written kernels, tests) every
// part is included. The core (scalar types, traits, vectors, thread ids,
// barriers and memory flags, the launch glue) is always included.
//
// Parts and what they need (the translator adds the dependencies):
//   HALF_OPS    half arithmetic with Metal's promotion rules
//   MATH        metal:: float, common and min/max functions; precise::, fast:: names
//   MATH_EXTRA  output-argument, relational, geometric and integer functions (needs MATH)
//   FAST_MATH   metal::fast:: on approximate instructions (needs MATH)
//   SIMD        SIMD-group and quad-group functions (needs MATH, HALF_OPS)
//   ATOMICS     atomic<T> and the atomic_* functions (needs MATH, HALF_OPS)
//   MATRIX      simdgroup_matrix (needs MATH, HALF_OPS)
//   MATRICES    matrix<T, C, R> and the floatCxR names (metal_matrix.h)
//   MLX_UTILS   MLX's utils: elem_to_loc*, ceildiv, Limits
//   TENSOR      Metal 4 tensors, cooperative tensors and mpp::tensor_ops::matmul2d
//               (needs HALF_OPS, SIMD)
//   LANE_STATE  CUDA: the record of each SIMD group's present lanes, kept from
//               kernel entry (SIMD, TENSOR and simdgroup_barrier read it)
#pragma once

#ifndef ALLOY_MSL_SELECT
#define ALLOY_MSL_USE_HALF_OPS 1
#define ALLOY_MSL_USE_MATH 1
#define ALLOY_MSL_USE_MATH_EXTRA 1
#define ALLOY_MSL_USE_FAST_MATH 1
#define ALLOY_MSL_USE_SIMD 1
#define ALLOY_MSL_USE_ATOMICS 1
#define ALLOY_MSL_USE_MATRIX 1
#define ALLOY_MSL_USE_MATRICES 1
#define ALLOY_MSL_USE_MLX_UTILS 1
#define ALLOY_MSL_USE_TENSOR 1
#define ALLOY_MSL_USE_LANE_STATE 1
#endif
