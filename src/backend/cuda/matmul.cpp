// GPU matmul: cuBLAS (cublasGemmStridedBatchedEx) for float32 (full fp32;
// TF32 on request, alloy/runtime.h), float16/bfloat16 (fp32 accumulation, as the CPU's float path),
// float64 and complex64; the naive kernel of device/gemm.cuh otherwise.
#include <algorithm>

#include "alloy/runtime.h"
#include "backend/common/blas_layout.h"
#include "backend/cpu/strided.h"
#include "backend/cuda/cublas.h"
#include "backend/cuda/elementwise.h"
#include "backend/cuda/kernel_sources.h"
#include "backend/cuda/kernels.h"
#include "primitives/linalg.h"

namespace alloy {

using namespace cuda;

namespace {

bool cublas_type(Dtype d, cublas::DataType& t, cublas::ComputeType& c) {
  switch (d) {
    case Dtype::float32:
      // TF32 tensor cores only when the user asked (set_float32_matmul_precision).
      t = cublas::R_32F;
      c = float32_matmul_uses_tf32() ? cublas::COMPUTE_32F_FAST_TF32 : cublas::COMPUTE_32F;
      return true;
    case Dtype::float16: t = cublas::R_16F; c = cublas::COMPUTE_32F; return true;
    case Dtype::bfloat16: t = cublas::R_16BF; c = cublas::COMPUTE_32F; return true;
    case Dtype::float64: t = cublas::R_64F; c = cublas::COMPUTE_64F; return true;
    case Dtype::complex64: t = cublas::C_32F; c = cublas::COMPUTE_32F; return true;
    default: return false;
  }
}

// One batch stride per operand when the batch dims walk uniformly.
bool uniform_batch(const Shape& batch, const Strides& sa, const Strides& sb, int64_t& ba, int64_t& bb) {
  cpu::CollapsedLayout c = cpu::collapse_dims(batch, {sa, sb});
  if (c.shape.size() > 1) return false;
  ba = c.shape.empty() ? 0 : c.strides[0][0];
  bb = c.shape.empty() ? 0 : c.strides[1][0];
  return true;
}

}  // namespace

void Matmul::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  array a = inputs[0];
  array b = inputs[1];
  array& out = outputs[0];
  allocate_row_contiguous(out);
  if (out.size() == 0) return;
  CUstream s = stream_for(stream());
  const int nd = a.ndim();
  const int64_t M = a.shape(nd - 2), K = a.shape(nd - 1), N = b.shape(nd - 1);
  Shape batch(out.shape().begin(), out.shape().end() - 2);
  if (K == 0) {  // a sum of nothing: zero bits are zero in every dtype
    check(cuda_driver::api().cuMemsetD8Async(dptr(out.raw_data()), 0, out.nbytes(), s), "matmul", "cuMemsetD8Async");
    note_pending(stream());
    return;
  }
  cublas::DataType type;
  cublas::ComputeType compute;
  if (cublas_type(out.dtype(), type, compute) && cublas::available()) {
    int64_t lda, ldb;
    bool ta, tb;
    if (!blas_layout(a, lda, ta)) a = row_contiguous(a, s, "matmul");
    if (!blas_layout(b, ldb, tb)) b = row_contiguous(b, s, "matmul");
    blas_layout(a, lda, ta);
    blas_layout(b, ldb, tb);
    int64_t ba = 0, bb = 0;
    Strides sa(a.strides().begin(), a.strides().end() - 2), sb(b.strides().begin(), b.strides().end() - 2);
    if (!uniform_batch(batch, sa, sb, ba, bb)) {
      a = row_contiguous(a, s, "matmul");
      b = row_contiguous(b, s, "matmul");
      blas_layout(a, lda, ta);
      blas_layout(b, ldb, tb);
      ba = M * K;
      bb = K * N;
    }
    // Row-major C = A B is column-major C^T = B^T A^T: cuBLAS gets b first.
    cublas::gemm_strided_batched(s, tb, ta, static_cast<int>(N), static_cast<int>(M), static_cast<int>(K),
                                 b.raw_data(), static_cast<int>(ldb), bb, a.raw_data(), static_cast<int>(lda), ba,
                                 out.raw_data(), static_cast<int>(N), M * N, static_cast<int>(shape_size(batch)),
                                 type, compute);
    note_pending(stream());
    return;
  }
  Strides sa(a.strides().begin(), a.strides().end() - 2), sb(b.strides().begin(), b.strides().end() - 2);
  Shape bshape = batch.empty() ? Shape{1} : batch;
  if (batch.empty()) {
    sa = {0};
    sb = {0};
  }
  StridedLayout<2> L = make_layout<2>(bshape, {&sa, &sb}, "matmul");
  const Dtype t = out.dtype();
  CUfunction fn = kernel(std::string("gemm/") + dtype_name(t), "gemm_naive", [t](const std::string& k) { return gemm_source(t, k); });
  const void* pa = a.raw_data();
  const void* pb = b.raw_data();
  void* pc = out.raw_data();
  int64_t sam = a.strides()[nd - 2], sak = a.strides()[nd - 1], sbk = b.strides()[nd - 2], sbn = b.strides()[nd - 1];
  int64_t n_out = static_cast<int64_t>(out.size());
  int64_t m = M, n = N, k = K;
  launch(fn, grid_blocks(n_out), kBlock, 0, s, pa, pb, pc, m, n, k, sam, sak, sbk, sbn, L, n_out);
  note_pending(stream());
}

}  // namespace alloy
