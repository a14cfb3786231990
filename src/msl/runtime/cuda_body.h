// The prelude of a CUDA body (mx.fast.cuda_kernel), compiled by NVRTC. It
// stands in for what MLX's CUDA kernels see: fixed-width integers, the
// toolkit's 16-bit float types, cooperative groups (`cg`, for bodies that
// name them), `inf`, and the by-value shape/strides parameters. The
// toolkit headers are found through
// the include path the JIT passes (ALLOY_CUDA_HOME, CUDA_HOME, or the
// toolkit NVRTC came from); a body that needs a missing one gets an #error
// that says which.
#pragma once

#if !defined(__CUDACC_RTC__)
#error "cuda_body.h is compiled by NVRTC only"
#endif

// ---- fixed-width integers: NVRTC has no <stdint.h>; libcu++ (with the
// toolkit) declares them globally, else we do (LP64, as glibc spells them).
#if __has_include(<cuda/std/cstdint>)
#include <cuda/std/cstdint>
#else
#include "nvrtc_stdint.h"
#endif

#if __has_include(<cuda_fp16.h>)
#include <cuda_fp16.h>
#elif ALLOY_CUDA_BODY_FP16
#error "cuda_kernel: float16 needs cuda_fp16.h from the CUDA toolkit, which was not found (set ALLOY_CUDA_HOME)"
#endif
#if __has_include(<cuda_bf16.h>)
#include <cuda_bf16.h>
#elif ALLOY_CUDA_BODY_BF16
#error "cuda_kernel: bfloat16 needs cuda_bf16.h from the CUDA toolkit, which was not found (set ALLOY_CUDA_HOME)"
#endif
#if ALLOY_CUDA_BODY_COMPLEX
#if __has_include(<cuComplex.h>)
#include <cuComplex.h>
#else
#error "cuda_kernel: complex64 needs cuComplex.h from the CUDA toolkit, which was not found (set ALLOY_CUDA_HOME)"
#endif
#endif
#if ALLOY_CUDA_BODY_COOPERATIVE_GROUPS
#if __has_include(<cooperative_groups.h>)
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
#else
#error "cuda_kernel: cooperative groups need cooperative_groups.h from the CUDA toolkit, which was not found (set ALLOY_CUDA_HOME)"
#endif
#endif

#include "cuda_launch.h"

// MLX's CUDA kernels see `inf` as float infinity.
#define inf __int_as_float(0x7f800000)
