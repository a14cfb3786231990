// cuBLAS, loaded at run time (dlopen libcublas.so.13/12 from the CUDA
// toolkit) like the driver and NVRTC, so building needs no CUDA library.
#pragma once

#include <string>

#include "backend/cuda/device.h"

namespace alloy::cuda::cublas {

// cudaDataType and cublasComputeType_t values (library_types.h, cublas_api.h).
enum DataType : int { R_32F = 0, R_64F = 1, R_16F = 2, C_32F = 4, R_16BF = 14 };
enum ComputeType : int { COMPUTE_32F = 68, COMPUTE_64F = 70, COMPUTE_32F_FAST_TF32 = 77 };

// True when libcublas loads and binds (never throws).
bool available();
const std::string& unavailable_reason();

// Creates the handle for the current context ahead of the first matmul (the
// prefetch thread, once the context exists). Nothing is enqueued: cuBLAS's
// first-GEMM setup (about 70 ms on an H100) stays with the first matmul,
// because a warm-up GEMM on this thread failed the kernel-timeout tests
// (2026-12-06/07, docs/design/faults.md). Never throws; a failure is left
// for the matmul to report.
void prepare_handle() noexcept;

// C (col-major, m x n, ldc) = op(A) op(B) for `batch` matrices at fixed
// element strides, on `stream`. alpha = 1, beta = 0 in the compute type.
void gemm_strided_batched(CUstream stream, bool trans_a, bool trans_b, int m, int n, int k, const void* A,
                          int lda, long long stride_a, const void* B, int ldb, long long stride_b, void* C, int ldc,
                          long long stride_c, int batch, DataType type, ComputeType compute);

}  // namespace alloy::cuda::cublas
